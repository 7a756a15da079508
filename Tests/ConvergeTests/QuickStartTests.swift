import Converge
import Foundation
import Testing

/// The README's quick start, line for line between the markers (`.ci/check_quickstart.py`
/// checks that they match), so that what users copy compiles and runs.
@Suite("The README quick start")
struct QuickStartTests {
    @Test func quickStartRunsAsWritten() throws {
        // quick-start begin
        let hub = InMemoryHub()                                   // iCloud's quota by default
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub)
        phone.set(["Surrey", "Kent"], forKey: "FavouriteCounties")
        _ = phone.synchronize()                                   // push to the hub, pull from it
        _ = tablet.synchronize()                                  // pull: posts didChangeExternallyNotification
        print(tablet.array(forKey: "FavouriteCounties") ?? [])    // ["Surrey", "Kent"]
        do {
            try phone.setValue(.data(Data(count: 2_000_000)), forKey: "Huge")
        } catch {
            print(error)  // quota exceeded: writing "Huge" would make the value bytes 2000004, over the limit of 1048576
        }
        // quick-start end
        #expect(tablet.array(forKey: "FavouriteCounties") as? [String] == ["Surrey", "Kent"])
        #expect(phone.object(forKey: "Huge") == nil)
    }
}
