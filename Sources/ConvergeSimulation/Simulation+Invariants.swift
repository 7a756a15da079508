/// The checks that run after every step of the event loop.
extension Simulation {
    /// Runs after every step (every event the loop handles).
    func checkInvariantsAfterStep() {}
}
