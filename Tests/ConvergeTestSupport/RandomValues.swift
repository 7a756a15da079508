import Converge
import ConvergeSimulation
import Foundation

extension Value {
    /// A random valid value, nested at most `depth` levels.
    package static func random(using generator: inout Xoshiro256StarStar, depth: Int = 3) -> Value {
        let kinds = depth > 0 ? 8 : 6
        switch generator.next(below: kinds) {
        case 0: return .string(String((0..<generator.next(below: 6)).map { _ in generator.element(of: Array("aé🙂z ")) }))
        case 1: return .integer(Int64(bitPattern: generator.next()) >> UInt64(generator.next(below: 64)))
        case 2:
            let special: [Double] = [0, -0.0, .infinity, -.infinity, .leastNonzeroMagnitude, 1.5, -2.75]
            return .double(generator.chance(0.3) ? generator.element(of: special) : Double(generator.next(below: 1_000_000)) / 7)
        case 3: return .bool(generator.chance(0.5))
        case 4: return .data(Data((0..<generator.next(below: 5)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }))
        case 5: return .date(Date(timeIntervalSince1970: Double(generator.next(below: 2_000_000_000)) / 3))
        case 6: return .array((0..<generator.next(below: 4)).map { _ in random(using: &generator, depth: depth - 1) })
        default:
            var members: [String: Value] = [:]
            for _ in 0..<generator.next(below: 4) {
                members["k\(generator.next(below: 6))"] = random(using: &generator, depth: depth - 1)
            }
            return .dictionary(members)
        }
    }
}
