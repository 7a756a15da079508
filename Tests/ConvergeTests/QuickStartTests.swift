import Converge
import Foundation
import Testing

/// The README's quick start, line for line between the markers (`.ci/check_quickstart.py`
/// checks that they match), so that what users copy compiles and runs.
@Suite("The README quick start")
struct QuickStartTests {
    @Test func quickStartRunsAsWritten() throws {
        // quick-start begin
        let store = ReplicatedKeyValueStore(replicaID: "phone")
        store.set(["Surrey", "Kent"], forKey: "FavouriteCounties")
        store.set(true, forKey: "DarkMode")
        print(store.array(forKey: "FavouriteCounties") ?? [])  // ["Surrey", "Kent"]
        print(store.bool(forKey: "DarkMode"))                   // true
        do {
            try store.setValue(.data(Data(count: 2_000_000)), forKey: "Huge")
        } catch {
            print(error)  // quota exceeded: writing "Huge" would make the value bytes 2000004, over the limit of 1048576
        }
        // quick-start end
        #expect(store.array(forKey: "FavouriteCounties") as? [String] == ["Surrey", "Kent"])
        #expect(store.object(forKey: "Huge") == nil)
    }
}
