import Converge
import Foundation

/// How the `converge` tool prints values and reads typed input.
enum ValueJSON {
    /// A value as a JSON-compatible object: data as `{"data": base64}`, dates as
    /// `{"date": ISO 8601}`.
    static func object(_ value: Value) -> Any {
        switch value {
        case .string(let s): return s
        case .integer(let i): return NSNumber(value: i)
        // JSON has no infinities: they print as `{"double": "Infinity"}`, as data and dates
        // print as objects. (NaN is never stored.)
        case .double(let d) where d.isInfinite: return ["double": d > 0 ? "Infinity" : "-Infinity"]
        case .double(let d): return NSNumber(value: d)
        case .bool(let b): return b
        case .data(let d): return ["data": d.base64EncodedString()]
        case .date(let date): return ["date": ISO8601DateFormatter().string(from: date)]
        case .array(let items): return items.map(object)
        case .dictionary(let members): return members.mapValues(object)
        }
    }

    static func text(_ object: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Parses command-line input as a value of `type`.
    static func parse(_ text: String, type: String) throws(ToolError) -> Value {
        switch type {
        case "string": return .string(text)
        case "integer":
            guard let i = Int64(text) else { throw .usage("\"\(text)\" is not an integer") }
            return .integer(i)
        case "double":
            // Infinities are stored as property lists and UserDefaults store them; NaN is not.
            guard let d = Double(text), !d.isNaN else { throw .usage("\"\(text)\" is not a number") }
            return .double(d)
        case "bool":
            switch text.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default: throw .usage("\"\(text)\" is not a bool (true or false)")
            }
        case "data":
            guard let data = Data(base64Encoded: text) else { throw .usage("\"\(text)\" is not base64") }
            return .data(data)
        case "json":
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else {
                throw .usage("\"\(text)\" is not valid JSON")
            }
            if object is NSNull { throw .usage("JSON null has no value: use `delete` to remove a key") }
            return try fromJSON(object)
        default:
            throw .usage("unknown type \"\(type)\"; types: string, integer, double, bool, data, json")
        }
    }

    private static func fromJSON(_ object: Any) throws(ToolError) -> Value {
        switch object {
        case let s as String: return .string(s)
        case let n as NSNumber:
            // JSONSerialization marks booleans with the Objective-C type "c", integers with
            // an integer type and other numbers with "d".
            switch String(cString: n.objCType) {
            case "c": return .bool(n.boolValue)
            case "d", "f": return .double(n.doubleValue)
            // Unsigned: above Int64.max it would wrap to a negative integer.
            case "Q", "L", "I", "S", "C":
                guard n.uint64Value <= UInt64(Int64.max) else { throw .usage("\(n.uint64Value) is larger than the largest integer, \(Int64.max)") }
                return .integer(Int64(n.uint64Value))
            default: return .integer(n.int64Value)
            }
        case let items as [Any]:
            var values: [Value] = []
            for item in items { values.append(try fromJSON(item)) }
            return .array(values)
        case let members as [String: Any]:
            var values: [String: Value] = [:]
            for (key, item) in members { values[key] = try fromJSON(item) }
            return .dictionary(values)
        default:
            throw .usage("null cannot be stored inside an array or dictionary (property lists have no null)")
        }
    }

}
