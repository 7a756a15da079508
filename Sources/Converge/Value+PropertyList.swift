import Foundation

extension Value {
    /// Converts a property-list object (`String`, `Bool`, any integer or floating-point
    /// type, `NSNumber`, `Data`, `Date`, arrays and `[String: Any]` dictionaries of
    /// these) into a value.
    ///
    /// - Throws: ``ConvergeError/invalidValue(_:)`` for another type, a NaN, an integer
    ///   that does not fit in `Int64`, or nesting deeper than ``maximumNestingDepth``.
    public init(propertyList object: Any) throws(ConvergeError) {
        self = try Self.convert(object, depth: 0)
        try validate()
    }

    private static func convert(_ object: Any, depth: Int) throws(ConvergeError) -> Value {
        // Exact Swift types first: on Darwin an `Int` would also match `as Bool` through
        // NSNumber bridging, and an NSNumber holding 1 would match `as Bool` everywhere.
        switch object {
        case let value as Value: return value
        case let text as String: return .string(text)
        case let data as Data: return .data(data)
        case let date as Date: return .date(date)
        default: break
        }
        if let number = object as? NSNumber, type(of: object) is NSNumber.Type {
            return try convert(number)
        }
        switch object {
        case let flag as Bool where type(of: object) == Bool.self: return .bool(flag)
        case let number as Int where type(of: object) == Int.self: return .integer(Int64(number))
        case let number as Int64 where type(of: object) == Int64.self: return .integer(number)
        case let number as Int32 where type(of: object) == Int32.self: return .integer(Int64(number))
        case let number as Int16 where type(of: object) == Int16.self: return .integer(Int64(number))
        case let number as Int8 where type(of: object) == Int8.self: return .integer(Int64(number))
        case let number as UInt where type(of: object) == UInt.self: return try integer(exactly: number)
        case let number as UInt64 where type(of: object) == UInt64.self: return try integer(exactly: number)
        case let number as UInt32 where type(of: object) == UInt32.self: return .integer(Int64(number))
        case let number as UInt16 where type(of: object) == UInt16.self: return .integer(Int64(number))
        case let number as UInt8 where type(of: object) == UInt8.self: return .integer(Int64(number))
        case let number as Double where type(of: object) == Double.self: return .double(number)
        case let number as Float where type(of: object) == Float.self: return .double(Double(number))
        case let text as NSString: return .string(String(describing: text))
        case let elements as [Any]:
            guard depth < maximumNestingDepth else { throw .invalidValue(.tooDeep(limit: maximumNestingDepth)) }
            var converted: [Value] = []
            converted.reserveCapacity(elements.count)
            for element in elements { converted.append(try convert(element, depth: depth + 1)) }
            return .array(converted)
        case let members as [String: Any]:
            guard depth < maximumNestingDepth else { throw .invalidValue(.tooDeep(limit: maximumNestingDepth)) }
            var converted: [String: Value] = [:]
            converted.reserveCapacity(members.count)
            for (key, member) in members { converted[key] = try convert(member, depth: depth + 1) }
            return .dictionary(converted)
        default:
            throw .invalidValue(.unsupportedType(String(describing: type(of: object))))
        }
    }

    private static func integer<T: BinaryInteger>(exactly number: T) throws(ConvergeError) -> Value {
        guard let exact = Int64(exactly: number) else {
            throw .invalidValue(.unsupportedType("\(T.self) value \(number), which does not fit in Int64,"))
        }
        return .integer(exact)
    }

    private static func convert(_ number: NSNumber) throws(ConvergeError) -> Value {
        switch String(cString: number.objCType) {
        case "c", "B":
            return .bool(number.boolValue)
        case "f", "d":
            return .double(number.doubleValue)
        case "Q", "L":
            return try integer(exactly: number.uint64Value)
        default:
            return .integer(number.int64Value)
        }
    }

    /// The value as Foundation objects, as `NSUbiquitousKeyValueStore.object(forKey:)`
    /// returns them: `String`, `NSNumber` (for integers, doubles and bools, so that
    /// `as? Int`, `as? Double` and `as? Bool` work), `Data`, `Date`, `[Any]` and
    /// `[String: Any]`.
    public var propertyListObject: Any {
        switch self {
        case .string(let text): return text
        case .integer(let number): return NSNumber(value: number)
        case .double(let number): return NSNumber(value: number)
        case .bool(let flag): return NSNumber(value: flag)
        case .data(let bytes): return bytes
        case .date(let date): return date
        case .array(let elements): return elements.map(\.propertyListObject)
        case .dictionary(let members): return members.mapValues(\.propertyListObject)
        }
    }
}

extension Value {
    /// Encodes any `Encodable` type as a value, through its property-list form.
    ///
    /// - Throws: ``ConvergeError/invalidValue(_:)`` if the encoding is not a valid value
    ///   (for example a NaN), or the encoder's error as ``ConvergeError/malformed(_:)``.
    public init<T: Encodable>(encoding instance: T) throws(ConvergeError) {
        let object: Any
        do {
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            // Wrapped in an array: a property list's top level cannot be a scalar (an Int,
            // a String) for every encoder, and an array's element can.
            let data = try encoder.encode([instance])
            guard let wrapped = try PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [Any],
                  wrapped.count == 1 else {
                throw ConvergeError.malformed(.typeMismatch, "the encoder did not give one element")
            }
            object = wrapped[0]
        } catch {
            throw .malformed(.typeMismatch, "cannot encode \(T.self) as a property list: \(error)")
        }
        try self.init(propertyList: object)
    }

    /// Decodes a `Decodable` type from this value.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if the value does not have the shape of `T`.
    public func decode<T: Decodable>(_ type: T.Type) throws(ConvergeError) -> T {
        do {
            let data = try PropertyListSerialization.data(fromPropertyList: [propertyListObject], format: .binary, options: 0)
            let decoded = try PropertyListDecoder().decode([T].self, from: data)
            guard decoded.count == 1 else { throw ConvergeError.malformed(.typeMismatch, "not one element") }
            return decoded[0]
        } catch {
            throw .malformed(.typeMismatch, "cannot decode \(T.self) from \(self): \(error)")
        }
    }
}
