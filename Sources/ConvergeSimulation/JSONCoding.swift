import Foundation

/// The package's one JSON stack: Foundation's `JSONEncoder` and `JSONDecoder`, set up once.
///
/// Output is compact with members sorted by name (`.sortedKeys`), so equal values give
/// byte-identical text in every process, whatever order a `Dictionary` iterates in.
/// Input is checked by `JSONSerialization` first, whose syntax errors say what is wrong and
/// where (a number with a leading zero, an unterminated string), then decoded; a decoding
/// error names the member that is wrong.
package enum JSONCoding {
    /// A member name of a JSON object, for objects whose members are not fixed (options).
    package struct MemberKey: CodingKey {
        package var stringValue: String
        package var intValue: Int? { nil }
        package init(stringValue: String) { self.stringValue = stringValue }
        package init?(intValue: Int) { nil }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Non-finite numbers have no JSON form; nothing the simulator reports is one, but a
        // report must never fail to print.
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return encoder
    }()

    /// `value` as one line of JSON.
    package static func encoded(_ value: some Encodable) -> String {
        String(decoding: bytes(of: value), as: UTF8.self)
    }

    /// `value` as the bytes of one line of JSON.
    package static func bytes(of value: some Encodable) -> [UInt8] {
        do {
            return Array(try encoder.encode(value))
        } catch {
            // The package's types encode only strings, integers, booleans, finite or
            // converted numbers, arrays and objects, none of which can fail.
            preconditionFailure("a report could not be encoded as JSON: \(error)")
        }
    }

    /// A number as JSON writes it: an integral value without a fraction, else the
    /// shortest text that reads back as the same `Double`.
    package static func text(of number: Double) -> String {
        if number.isFinite, number.rounded() == number, abs(number) < 1e15 { return String(Int64(number)) }
        return encoded(number)
    }

    /// Decodes one JSON text.
    ///
    /// - Throws: ``ScenarioError``: a syntax error with where it is, or a decoding error
    ///   naming the member that is wrong (or the error the type's decoder threw).
    package static func decode<T: Decodable>(_ type: T.Type, from text: String) throws(ScenarioError) -> T {
        let data = Data(text.utf8)
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw ScenarioError("not valid JSON: \(detail)")
        }
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as ScenarioError {
            throw error
        } catch let error as DecodingError {
            throw ScenarioError(message(for: error))
        } catch {
            throw ScenarioError("\(error)")
        }
    }

    /// What a decoding error says, naming the member.
    private static func message(for error: DecodingError) -> String {
        func member(_ path: [any CodingKey]) -> String {
            path.isEmpty ? "the value" : "\"" + path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".") + "\""
        }
        switch error {
        case .typeMismatch(_, let context): return "\(member(context.codingPath)) has the wrong type: \(context.debugDescription)"
        case .valueNotFound(_, let context): return "\(member(context.codingPath)) must not be null"
        case .keyNotFound(let key, let context): return "no \(member(context.codingPath + [key]))"
        case .dataCorrupted(let context): return "\(member(context.codingPath)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}

extension KeyedDecodingContainer {
    /// Member `key` if it is present, naming the member in the error if it is not a `T`.
    ///
    /// Foundation's decoder reports some problems (a fraction where an integer belongs, a
    /// number too large) without the member; this names it.
    package func member<T: Decodable>(_ type: T.Type, _ key: Key) throws(ScenarioError) -> T? {
        guard contains(key) else { return nil }
        let path = (codingPath + [key]).map(\.stringValue).joined(separator: ".")
        do {
            return try decodeIfPresent(T.self, forKey: key)
        } catch let error as ScenarioError {
            throw ScenarioError("\"\(path)\": \(error.message)")
        } catch {
            throw ScenarioError("\"\(path)\" must be \(JSONCoding.noun(for: T.self))")
        }
    }
}

extension JSONCoding {
    /// `type` in words, for messages.
    static func noun(for type: Any.Type) -> String {
        switch type {
        case is Int.Type: return "an integer"
        case is Double.Type: return "a number"
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is [Int].Type: return "an array of integers"
        case is [String].Type: return "an array of strings"
        case is [Violation].Type: return "an array of violations ({\"kind\": …, \"message\": …})"
        default: return "a \(type)"
        }
    }
}
