import Foundation

/// The conversions `NSUbiquitousKeyValueStore`'s scalar getters perform, which follow
/// `NSNumber` and `NSString`: `boolValue`, `longLongValue`, `doubleValue`, `stringValue`.
extension Value {
    /// `bool(forKey:)`: non-zero numbers are true; a string is true when, after leading
    /// white space, an optional sign and leading zeros, it starts with Y, y, T, t or a
    /// digit 1–9 (so "YES", "true" and "1" are true).
    public var boolConversion: Bool {
        switch self {
        case .bool(let flag): return flag
        case .integer(let number): return number != 0
        case .double(let number): return number != 0
        case .string(let text): return Self.stringBoolValue(text)
        default: return false
        }
    }

    /// `longLong(forKey:)`: doubles truncate toward zero (2.67 → 2) and clamp to the
    /// `Int64` range; strings parse a leading decimal integer ("123" → 123), 0 otherwise.
    public var longLongConversion: Int64 {
        switch self {
        case .integer(let number): return number
        case .bool(let flag): return flag ? 1 : 0
        case .double(let number): return Self.clampedInt64(number)
        case .string(let text): return Self.stringLongLongValue(text)
        default: return 0
        }
    }

    /// `double(forKey:)`: integers and bools widen; strings parse a leading decimal
    /// number ("123.4" → 123.4), 0 otherwise.
    public var doubleConversion: Double {
        switch self {
        case .double(let number): return number
        case .integer(let number): return Double(number)
        case .bool(let flag): return flag ? 1 : 0
        case .string(let text): return Self.stringDoubleValue(text)
        default: return 0
        }
    }

    /// `string(forKey:)`: strings as they are; numbers as `NSNumber.stringValue` writes
    /// them (123 → "123", 2.5 → "2.5", 2.0 → "2", true → "1"); `nil` for other types.
    public var stringConversion: String? {
        switch self {
        case .string(let text): return text
        case .integer(let number): return String(number)
        case .bool(let flag): return flag ? "1" : "0"
        case .double(let number):
            if number.rounded() == number, abs(number) < 1e15 { return String(Int64(number)) }
            return String(number)
        default: return nil
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    static func stringBoolValue(_ text: String) -> Bool {
        var bytes = Substring(text).utf8.drop(while: isSpace)
        if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        bytes = bytes.drop { $0 == UInt8(ascii: "0") }
        guard let first = bytes.first else { return false }
        return "YyTt123456789".utf8.contains(first)
    }

    static func stringLongLongValue(_ text: String) -> Int64 {
        var bytes = Substring(text).utf8.drop(while: isSpace)
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            negative = first == UInt8(ascii: "-")
            bytes = bytes.dropFirst()
        }
        var magnitude: UInt64 = 0
        var overflow = false
        for byte in bytes {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { break }
            let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (plus, o2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            if o1 || o2 { overflow = true; break }
            magnitude = plus
        }
        if negative {
            if overflow || magnitude > UInt64(Int64.max) + 1 { return .min }
            return magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)
        }
        if overflow || magnitude > UInt64(Int64.max) { return .max }
        return Int64(magnitude)
    }

    static func stringDoubleValue(_ text: String) -> Double {
        // The longest prefix (after white space) that parses as a decimal number.
        let trimmed = Substring(text).drop { $0.isWhitespace }
        var candidate = Substring(trimmed.prefix { "+-0123456789.eE".contains($0) })
        while !candidate.isEmpty {
            if let number = Double(candidate) { return number }
            candidate = candidate.dropLast()
        }
        return 0
    }

    static func clampedInt64(_ number: Double) -> Int64 {
        if number.isNaN { return 0 }
        if number >= 9_223_372_036_854_775_807.0 { return .max }
        if number <= -9_223_372_036_854_775_808.0 { return .min }
        return Int64(number.rounded(.towardZero))
    }
}
