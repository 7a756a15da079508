/// A JSON value with a deterministic serialisation: object members keep the order they
/// were built in (reports build them in a fixed order), numbers print the same on every
/// platform, and nothing depends on `Dictionary` iteration order.
public enum JSON: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    public static func == (lhs: JSON, rhs: JSON) -> Bool { lhs.serialized() == rhs.serialized() }
    public func hash(into hasher: inout Hasher) { hasher.combine(serialized()) }

    /// The member `key` of an object, or `nil`.
    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    /// The compact serialisation (one line).
    public func serialized() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += JSON.format(d)
        case .string(let s): JSON.writeString(s, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                JSON.writeString(key, to: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    /// Doubles print with at most 6 decimals and no exponent, so reports are stable and
    /// readable; non-finite values (which JSON cannot hold) print as `null`.
    static func format(_ d: Double) -> String {
        guard d.isFinite else { return "null" }
        let scaled = (d * 1_000_000).rounded()
        if abs(scaled) >= 9e15 { return String(Int64(d.rounded())) }
        let micro = Int64(scaled)
        let sign = micro < 0 ? "-" : ""
        let magnitude = micro.magnitude
        let whole = magnitude / 1_000_000
        var fraction = String(magnitude % 1_000_000)
        guard fraction != "0" else { return sign + String(whole) }
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return sign + String(whole) + "." + fraction
    }

    private static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

// MARK: Accessors

extension JSON {
    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d == d.rounded() && abs(d) < 9e15: return Int64(d)
        default: return nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var arrayValue: [JSON]? {
        if case .array(let items) = self { return items }
        return nil
    }

    public var objectMembers: [(String, JSON)]? {
        if case .object(let members) = self { return members }
        return nil
    }
}

// MARK: Parsing

/// A JSON text that could not be parsed, with where.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    public var description: String { "\(message) at byte \(offset)" }
}

extension JSON {
    /// Parses one JSON text (RFC 8259); at most 64 levels of nesting.
    public init(parsing text: String) throws(JSONParseError) {
        var parser = JSONParser(bytes: Array(text.utf8))
        parser.skipWhitespace()
        self = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.offset == parser.bytes.count else { throw parser.error("unexpected text after the JSON value") }
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    var offset = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    func error(_ message: String) -> JSONParseError { JSONParseError(message: message, offset: offset) }

    mutating func skipWhitespace() {
        while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
    }

    mutating func expect(_ literal: String) throws(JSONParseError) {
        for byte in literal.utf8 {
            guard offset < bytes.count, bytes[offset] == byte else { throw error("expected \(literal)") }
            offset += 1
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSON {
        guard depth < 64 else { throw error("nested too deeply") }
        guard offset < bytes.count else { throw error("unexpected end of input") }
        switch bytes[offset] {
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "["):
            offset += 1
            var items: [JSON] = []
            skipWhitespace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") { offset += 1; return .array(items) }
            while true {
                skipWhitespace()
                items.append(try parseValue(depth: depth + 1))
                skipWhitespace()
                guard offset < bytes.count else { throw error("unterminated array") }
                if bytes[offset] == UInt8(ascii: "]") { offset += 1; return .array(items) }
                guard bytes[offset] == UInt8(ascii: ",") else { throw error("expected , or ] in array") }
                offset += 1
            }
        case UInt8(ascii: "{"):
            offset += 1
            var members: [(String, JSON)] = []
            skipWhitespace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") { offset += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let key = try parseString()
                if members.contains(where: { $0.0 == key }) { throw error("duplicate member \"\(key)\"") }
                skipWhitespace()
                try expect(":")
                skipWhitespace()
                members.append((key, try parseValue(depth: depth + 1)))
                skipWhitespace()
                guard offset < bytes.count else { throw error("unterminated object") }
                if bytes[offset] == UInt8(ascii: "}") { offset += 1; return .object(members) }
                guard bytes[offset] == UInt8(ascii: ",") else { throw error("expected , or } in object") }
                offset += 1
            }
        default:
            return try parseNumber()
        }
    }

    mutating func parseString() throws(JSONParseError) -> String {
        offset += 1
        var scalars = String.UnicodeScalarView()
        var run: [UInt8] = []
        func flush() { if !run.isEmpty { scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars); run = [] } }
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                flush()
                guard offset < bytes.count else { throw error("unterminated escape") }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    guard offset + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[offset..<offset + 4], as: UTF8.self), radix: 16)
                    else { throw error("invalid \\u escape") }
                    offset += 4
                    // Surrogate pairs are not needed by any file this project reads.
                    guard let scalar = Unicode.Scalar(code) else { throw error("unsupported \\u escape") }
                    scalars.append(scalar)
                default: throw error("invalid escape")
                }
            default:
                guard byte >= 0x20 else { throw error("control character in string") }
                run.append(byte)
            }
        }
        throw error("unterminated string")
    }

    mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = offset
        while offset < bytes.count, "+-0123456789.eE".utf8.contains(bytes[offset]) { offset += 1 }
        let text = String(decoding: bytes[start..<offset], as: UTF8.self)
        guard !text.isEmpty else { throw error("unexpected character") }
        if let i = Int64(text) { return .int(i) }
        if let d = Double(text), d.isFinite, text.first != "+", text.first != "." { return .double(d) }
        offset = start
        throw error("invalid number \(text)")
    }
}
