import Foundation

/// Draws the plan of a run from its options and seed.
package enum PlanGenerator {
    /// The events in time order; clock settings come first, at time 0.
    package static func plan(for options: SimulationOptions, seed: UInt64) -> [TimedEvent] {
        var generator = Xoshiro256StarStar(seed: seed)
        var events: [TimedEvent] = []
        let devices = options.devices
        for device in 0..<devices {
            let skew = options.clockSkewMs == 0 ? 0 : generator.next(in: -options.clockSkewMs...options.clockSkewMs)
            let ahead = device < options.aheadDevices ? options.aheadMs : 0
            let drift = options.clockDriftPpm == 0 ? 0 : generator.next(in: -options.clockDriftPpm...options.clockDriftPpm)
            events.append(TimedEvent(timeMs: 0, event: .clock(device: device, offsetMs: skew + ahead, driftPpm: drift)))
        }
        let keys = KeyChooser(options: options)
        let weights = [options.setWeight, options.removeWeight, options.syncWeight, options.readWeight]
        let totalWeight = weights.reduce(0, +)
        var time = 0
        for _ in 0..<options.operations {
            // Exponential gaps with the given mean: a Poisson stream of operations.
            let gap = -Double(options.operationIntervalMs) * log1p(-generator.nextUnitDouble())
            time += max(1, Int(gap.rounded()))
            let device = generator.next(below: devices)
            var pick = generator.next(below: max(totalWeight, 1))
            var kind = 0
            while kind < 3 && pick >= weights[kind] { pick -= weights[kind]; kind += 1 }
            let event: PlannedEvent
            switch kind {
            case 0: event = .set(device: device, key: keys.next(&generator),
                                 valueBytes: generator.next(in: options.minValueBytes...options.maxValueBytes))
            case 1: event = .remove(device: device, key: keys.next(&generator))
            case 2: event = .synchronize(device: device)
            default: event = .read(device: device, key: keys.next(&generator))
            }
            events.append(TimedEvent(timeMs: time, event: event))
        }
        let span = max(time, 1)
        func at() -> Int { generator.next(in: 0...span) }
        for _ in 0..<options.partitions {
            let group = (0..<devices).filter { _ in generator.chance(0.5) }
            events.append(TimedEvent(timeMs: at(), event: .partition(devices: group.isEmpty ? [0] : group, oneWay: false,
                                                                     durationMs: options.partitionMs)))
        }
        for _ in 0..<options.oneWayPartitions {
            let group = (0..<devices).filter { _ in generator.chance(0.5) }
            events.append(TimedEvent(timeMs: at(), event: .partition(devices: group.isEmpty ? [0] : group, oneWay: true,
                                                                     durationMs: options.partitionMs)))
        }
        for _ in 0..<options.offlinePeriods {
            events.append(TimedEvent(timeMs: at(), event: .offline(device: generator.next(below: devices), durationMs: options.offlineMs)))
        }
        if options.topology == .hub {
            for _ in 0..<options.hubOutages {
                events.append(TimedEvent(timeMs: at(), event: .hubOutage(durationMs: options.hubOutageMs)))
            }
            for _ in 0..<options.returns {
                // Silent past retirement, then back: the hub retires it, then sends it a full state.
                events.append(TimedEvent(timeMs: at(), event: .offline(device: generator.next(below: devices),
                                                                      durationMs: options.retirementMs + options.syncIntervalMs * 2 + 1)))
            }
        }
        for _ in 0..<options.crashes {
            events.append(TimedEvent(timeMs: at(), event: .crash(device: generator.next(below: devices), downMs: options.restartMs)))
        }
        for _ in 0..<options.accountSwitches {
            events.append(TimedEvent(timeMs: at(), event: .switchAccount(device: generator.next(below: devices),
                                                                         durationMs: generator.next(in: 1...span))))
        }
        // Drawn last, so that a scenario without these faults keeps the plan it always had.
        for _ in 0..<options.clockJumps {
            events.append(TimedEvent(timeMs: at(), event: .clockJump(device: generator.next(below: devices),
                                                                     byMs: generator.next(in: -options.clockJumpMs...options.clockJumpMs))))
        }
        for _ in 0..<options.diskFullPeriods {
            events.append(TimedEvent(timeMs: at(), event: .diskFull(device: generator.next(below: devices), durationMs: options.diskFullMs)))
        }
        if options.topology == .hub {
            for _ in 0..<options.hubCrashes {
                events.append(TimedEvent(timeMs: at(), event: .hubCrash(downMs: options.hubOutageMs)))
            }
            for _ in 0..<options.hubRestores {
                let times = [at(), at()].sorted()
                events.append(TimedEvent(timeMs: times[0], event: .hubBackup))
                events.append(TimedEvent(timeMs: times[1], event: .hubRestore(downMs: options.hubOutageMs)))
            }
        }
        for _ in 0..<options.deviceRestores {
            let device = generator.next(below: devices)
            let times = [at(), at()].sorted()
            events.append(TimedEvent(timeMs: times[0], event: .deviceBackup(device: device)))
            events.append(TimedEvent(timeMs: times[1], event: .deviceRestore(device: device, downMs: options.restartMs)))
        }
        if devices > 1 {
            for _ in 0..<options.deviceClones {
                let from = generator.next(below: devices)
                let to = (from + 1 + generator.next(below: devices - 1)) % devices
                events.append(TimedEvent(timeMs: at(), event: .deviceClone(from: from, to: to, downMs: options.restartMs)))
            }
        }
        // Stable: operations keep their order, faults go after operations at the same time.
        return events.enumerated().sorted { lhs, rhs in
            lhs.element.timeMs != rhs.element.timeMs ? lhs.element.timeMs < rhs.element.timeMs : lhs.offset < rhs.offset
        }.map(\.element)
    }
}
