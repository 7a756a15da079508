import Foundation

/// A run as a space-time diagram in one self-contained HTML page (inline SVG and a few
/// lines of script, nothing fetched): the hub and each device as a lane, time from left
/// to right, messages as arrows from send to arrival (lost, dropped and duplicated ones
/// marked), writes, removes, syncs and conflicts as marks on their lane, crashes,
/// offline periods, partitions, outages and full disks as bands, the heal and the first
/// violation as lines, and the violations above the diagram.
///
/// A long run gets a wide diagram (at least six pixels per message on average) in a
/// scrolling frame, with buttons that jump to the first violation, the heal, the start
/// and the end, or to a time typed in.
package enum SpaceTimeDiagram {
    /// The page for a run of `input` that gave `result`, which must carry a timeline.
    ///
    /// - Parameters:
    ///   - title: What the page is called (the trace's file name).
    ///   - reproduce: The command that reproduces the run, shown on the page.
    package static func html(input: SimulationInput, result: SimulationResult, title: String, reproduce: String) -> String {
        let timeline = result.timeline ?? SimulationTimeline()
        let layout = Layout(input: input, timeline: timeline)
        var svg = SVG()
        layout.drawLanes(into: &svg)
        layout.drawFaults(input.plan, into: &svg)
        layout.drawMessages(timeline.messages, into: &svg)
        layout.drawOperations(input.plan, into: &svg)
        layout.drawConflicts(timeline.conflicts, into: &svg)
        layout.drawMoments(timeline, into: &svg)
        layout.drawLaneLabels(into: &svg)
        let summary = """
            seed \(input.seed) · \(input.options.devices) devices · \(input.options.topology.rawValue) topology · \
            \(input.options.policy.rawValue) · \(input.variant.map { "variant \($0.rawValue) · " } ?? "")\
            \(timeline.messages.count) messages · \(timeline.endMs) ms
            """
        let verdict: String
        if result.violations.isEmpty {
            verdict = ##"<p class="passed">Passed: every checker held.</p>"##
        } else {
            let items = result.violations.map { "<li><b>\(escape($0.kind.label))</b>: \(escape($0.message))</li>" }.joined()
            verdict = ##"<div class="failed"><p>Failed: \##(result.violations.count) violation(s), the first found at \##(timeline.firstViolationMs.map { "\($0) ms" } ?? "the end").</p><ul>\##(items)</ul></div>"##
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <style>
            body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
            h1 { font-size: 18px; margin: 0 0 4px; }
            .passed { color: #1b7f3b; font-weight: 600; }
            .failed { border: 2px solid #c62828; background: #fdecea; padding: 4px 12px; }
            .failed p { color: #c62828; font-weight: 600; margin: 4px 0; }
            code { background: #f3f3f3; padding: 1px 4px; }
            #frame { overflow-x: auto; border: 1px solid #ccc; margin-top: 8px; }
            #controls button, #controls input { margin-right: 6px; }
            .legend span { display: inline-block; margin-right: 14px; }
            .swatch { display: inline-block; width: 14px; height: 10px; margin-right: 4px; vertical-align: middle; }
            </style></head><body>
            <h1>\(escape(title))</h1>
            <p>\(escape(summary))</p>
            <p>Reproduce: <code>\(escape(reproduce))</code></p>
            \(verdict)
            <div id="controls">
            <button id="to-start">start</button><button id="to-violation"\(timeline.firstViolationMs == nil ? " disabled" : "")>first violation</button><button id="to-heal"\(timeline.healedMs == nil ? " disabled" : "")>heal</button><button id="to-end">end</button>
            <label>go to <input id="to-time" type="number" min="0" max="\(timeline.endMs)" step="100" style="width: 90px"> ms</label>
            </div>
            <div class="legend">\(Layout.legend)</div>
            <div id="frame">\(svg.document(width: layout.width, height: layout.height, pixelsPerMs: layout.pixelsPerMs,
                                             violationMs: timeline.firstViolationMs, healedMs: timeline.healedMs))</div>
            <script>
            (function () {
              var frame = document.getElementById("frame"), svg = document.getElementById("diagram");
              var perMs = parseFloat(svg.getAttribute("data-px-per-ms")), left = \(Layout.left);
              var labels = document.getElementById("lane-labels");
              function keepLabels() { labels.setAttribute("transform", "translate(" + frame.scrollLeft + ",0)"); }
              frame.addEventListener("scroll", keepLabels);
              function show(ms) { frame.scrollLeft = Math.max(0, left + ms * perMs - frame.clientWidth / 2); keepLabels(); }
              document.getElementById("to-start").onclick = function () { frame.scrollLeft = 0; };
              document.getElementById("to-end").onclick = function () { frame.scrollLeft = frame.scrollWidth; };
              document.getElementById("to-violation").onclick = function () { show(parseFloat(svg.getAttribute("data-violation-ms"))); };
              document.getElementById("to-heal").onclick = function () { show(parseFloat(svg.getAttribute("data-healed-ms"))); };
              document.getElementById("to-time").onchange = function (event) { show(parseFloat(event.target.value) || 0); };
              if (svg.hasAttribute("data-violation-ms")) { show(parseFloat(svg.getAttribute("data-violation-ms"))); }
              document.body.setAttribute("data-ready", "yes");
            })();
            </script>
            </body></html>

            """
    }

    /// Escapes text for HTML and SVG.
    package static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// SVG elements, appended in drawing order.
    struct SVG {
        var elements: [String] = []

        mutating func add(_ element: String) { elements.append(element) }

        func document(width: Double, height: Double, pixelsPerMs: Double, violationMs: Int?, healedMs: Int?) -> String {
            var attributes = ##"id="diagram" xmlns="http://www.w3.org/2000/svg" width="\##(format(width))" height="\##(format(height))" data-px-per-ms="\##(pixelsPerMs)""##
            if let violationMs { attributes += ##" data-violation-ms="\##(violationMs)""## }
            if let healedMs { attributes += ##" data-healed-ms="\##(healedMs)""## }
            return """
                <svg \(attributes)>
                <defs>
                <marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="context-stroke"/></marker>
                </defs>
                \(elements.joined(separator: "\n"))
                </svg>
                """
        }
    }

    /// Where everything goes.
    struct Layout {
        static let left = 120.0
        static let top = 34.0
        static let laneHeight = 54.0
        static let colors = ["push": "#1565c0", "reply": "#2e7d32", "poll": "#9e9e9e", "up-to-date": "#bdbdbd", "gossip": "#00838f",
                             "file": "#8d6e63", "unreadable": "#000000"]
        static let legend = """
            <span><i class="swatch" style="background:#1565c0"></i>push</span><span><i class="swatch" style="background:#2e7d32"></i>reply</span>\
            <span><i class="swatch" style="background:#9e9e9e"></i>poll / up to date</span><span><i class="swatch" style="background:#00838f"></i>gossip</span>\
            <span><i class="swatch" style="background:#8d6e63"></i>file</span><span><i class="swatch" style="background:#7b1fa2"></i>duplicated copy</span>\
            <span>✕ lost (red) or dropped by a fault (grey)</span><span>● write ■ remove | sync ◆ conflict</span>\
            <span><i class="swatch" style="background:#ef9a9a"></i>crash</span><span><i class="swatch" style="background:#cfd8dc"></i>offline / outage</span>\
            <span><i class="swatch" style="background:#ffcc80"></i>partition</span><span><i class="swatch" style="background:#bcaaa4"></i>disk full</span>\
            <span><i class="swatch" style="background:#ce93d8"></i>other account</span>
            """

        let devices: Int
        let pixelsPerMs: Double
        let width: Double
        let height: Double

        init(input: SimulationInput, timeline: SimulationTimeline) {
            devices = input.options.devices
            let end = max(timeline.endMs, input.plan.last?.timeMs ?? 0, 1)
            // Wide enough to tell messages apart, at most 120,000 pixels.
            let wanted = max(1_400.0, 6.0 * Double(timeline.messages.count))
            pixelsPerMs = min(wanted, 120_000) / Double(end)
            width = Self.left + Double(end) * pixelsPerMs + 40
            height = Self.top + Double(devices + 1) * Self.laneHeight + 10
        }

        func x(_ ms: Int) -> Double { Self.left + Double(ms) * pixelsPerMs }

        func y(_ lane: SimulationTimeline.Lane) -> Double {
            switch lane {
            case .hub: return Self.top + Self.laneHeight / 2
            case .device(let d): return Self.top + Double(d + 1) * Self.laneHeight + Self.laneHeight / 2
            }
        }

        func drawLanes(into svg: inout SVG) {
            let lanes: [(SimulationTimeline.Lane, String)] = [(.hub, "hub")] + (0..<devices).map { (.device($0), "device \($0)") }
            for (lane, _) in lanes {
                svg.add(##"<line x1="\##(format(Self.left))" y1="\##(format(y(lane)))" x2="\##(format(width - 20))" y2="\##(format(y(lane)))" stroke="#607d8b" stroke-width="1.5"/>"##)
            }
            // A time axis: about one tick per 150 pixels, on round numbers.
            let end = (width - Self.left - 40) / pixelsPerMs
            let rough = 150 / pixelsPerMs
            let magnitude = pow(10, floor(log10(max(rough, 1))))
            let step = [1.0, 2.0, 5.0, 10.0].map { $0 * magnitude }.first { $0 >= rough } ?? 10 * magnitude
            var tick = 0.0
            while tick <= end {
                let at = x(Int(tick))
                svg.add(##"<line x1="\##(format(at))" y1="\##(format(Self.top - 8))" x2="\##(format(at))" y2="\##(format(height - 10))" stroke="#eeeeee"/>"##)
                svg.add(##"<text x="\##(format(at + 2))" y="\##(format(Self.top - 12))" font-size="10" fill="#757575">\##(Int(tick)) ms</text>"##)
                tick += step
            }
        }

        /// The lanes' names, last so they are on top, in a group the page's script keeps at
        /// the left edge of the frame as it scrolls.
        func drawLaneLabels(into svg: inout SVG) {
            let lanes: [(SimulationTimeline.Lane, String)] = [(.hub, "hub")] + (0..<devices).map { (.device($0), "device \($0)") }
            var group = ##"<g id="lane-labels"><rect x="0" y="\##(format(Self.top - 4))" width="76" height="\##(format(height - Self.top))" fill="#ffffff" opacity="0.85"/>"##
            for (lane, name) in lanes {
                group += ##"<text x="8" y="\##(format(y(lane) + 4))" font-weight="600">\##(name)</text>"##
            }
            svg.add(group + "</g>")
        }

        func band(_ lane: SimulationTimeline.Lane, from start: Int, lasting duration: Int, color: String, title: String, into svg: inout SVG) {
            let top = y(lane) - Self.laneHeight / 2 + 4
            svg.add(##"<rect x="\##(format(x(start)))" y="\##(format(top))" width="\##(format(max(2, Double(duration) * pixelsPerMs)))" height="\##(format(Self.laneHeight - 8))" fill="\##(color)" opacity="0.55"><title>\##(escape(title))</title></rect>"##)
        }

        func drawFaults(_ plan: [TimedEvent], into svg: inout SVG) {
            for timed in plan {
                let at = timed.timeMs
                switch timed.event {
                case .crash(let d, let down):
                    band(.device(d), from: at, lasting: down, color: "#ef9a9a", title: "device \(d) crashed at \(at) ms for \(down) ms", into: &svg)
                case .offline(let d, let duration):
                    band(.device(d), from: at, lasting: duration, color: "#cfd8dc", title: "device \(d) offline at \(at) ms for \(duration) ms", into: &svg)
                case .partition(let group, let oneWay, let duration):
                    for d in group {
                        band(.device(d), from: at, lasting: duration, color: "#ffcc80",
                             title: "\(oneWay ? "one-way " : "")partition of devices \(group.map(String.init).joined(separator: ", ")) at \(at) ms for \(duration) ms",
                             into: &svg)
                    }
                case .hubOutage(let duration):
                    band(.hub, from: at, lasting: duration, color: "#cfd8dc", title: "hub outage at \(at) ms for \(duration) ms", into: &svg)
                case .hubCrash(let down):
                    band(.hub, from: at, lasting: down, color: "#ef9a9a", title: "hub crashed at \(at) ms, restarted from its durable state after \(down) ms", into: &svg)
                case .hubRestore(let down):
                    band(.hub, from: at, lasting: down, color: "#e57373", title: "hub lost its state at \(at) ms, restarted from its last backup after \(down) ms", into: &svg)
                case .diskFull(let d, let duration):
                    band(.device(d), from: at, lasting: duration, color: "#bcaaa4", title: "device \(d)'s disk full at \(at) ms for \(duration) ms", into: &svg)
                case .switchAccount(let d, let duration):
                    band(.device(d), from: at, lasting: duration, color: "#ce93d8", title: "device \(d) on another account at \(at) ms for \(duration) ms", into: &svg)
                case .clockJump(let d, let by):
                    svg.add(##"<text x="\##(format(x(at) - 4))" y="\##(format(y(.device(d)) - 12))" font-size="12">⏱<title>device \##(d)'s clock jumped by \##(by) ms at \##(at) ms</title></text>"##)
                case .hubBackup:
                    svg.add(##"<text x="\##(format(x(at) - 4))" y="\##(format(y(.hub) - 12))" font-size="12">⎘<title>the hub's state backed up at \##(at) ms</title></text>"##)
                case .deviceRestore(let d, let down):
                    band(.device(d), from: at, lasting: down, color: "#e57373", title: "device \(d) powered off at \(at) ms, restarted from its disk's last backup after \(down) ms", into: &svg)
                case .deviceClone(let from, let to, let down):
                    band(.device(to), from: at, lasting: down, color: "#e57373", title: "device \(to) powered off at \(at) ms, restarted from a copy of device \(from)'s disk after \(down) ms", into: &svg)
                case .deviceBackup(let d):
                    svg.add(##"<text x="\##(format(x(at) - 4))" y="\##(format(y(.device(d)) - 12))" font-size="12">⎘<title>device \##(d)'s disk backed up at \##(at) ms</title></text>"##)
                case .set, .remove, .synchronize, .read, .clock:
                    break
                }
            }
        }

        func drawMessages(_ messages: [SimulationTimeline.Message], into svg: inout SVG) {
            for message in messages {
                let color = Self.colors[message.kind] ?? "#000000"
                let from = (x(message.sentMs), y(message.from))
                let target = y(message.to)
                let description = "message \(message.link)\(message.id >= 0 ? "" : " (not sent)"): \(message.kind), \(message.bytes) bytes, \(Self.name(message.from)) → \(Self.name(message.to)), sent at \(message.sentMs) ms"
                switch message.fate {
                case .lost, .droppedByFault, .droppedByFullQueue:
                    // A stub toward the receiver, ending in a cross.
                    let end = (from.0 + 10, from.1 + (target - from.1) * 0.3)
                    let (stroke, why) = message.fate == .lost ? ("#c62828", "lost by the network")
                        : message.fate == .droppedByFault ? ("#757575", "dropped: the link was down") : ("#757575", "dropped: the receiver's queue was full")
                    svg.add(##"<g><title>\##(escape(description)); \##(why)</title><line x1="\##(format(from.0))" y1="\##(format(from.1))" x2="\##(format(end.0))" y2="\##(format(end.1))" stroke="\##(stroke)" stroke-dasharray="3 2"/><text x="\##(format(end.0 - 4))" y="\##(format(end.1 + 4))" font-size="11" fill="\##(stroke)">✕</text></g>"##)
                case .sent:
                    for (copy, arrival) in message.arrivals.enumerated() {
                        let stroke = copy > 0 ? "#7b1fa2" : color
                        let note = !arrival.delivered ? "arrived at \(arrival.atMs) ms but the link was down: dropped"
                            : arrival.refusal.map { "arrived at \(arrival.atMs) ms, refused by the receiver (\($0))" } ?? "arrived at \(arrival.atMs) ms"
                        let dash = arrival.delivered ? "" : ##" stroke-dasharray="4 3""##
                        svg.add(##"<line x1="\##(format(from.0))" y1="\##(format(from.1))" x2="\##(format(x(arrival.atMs)))" y2="\##(format(target))" stroke="\##(stroke)" stroke-width="1.2" marker-end="url(#arrow)"\##(dash)><title>\##(escape(description)); \##(copy > 0 ? "duplicate copy \(copy + 1) of \(message.copies), " : "")\##(note)</title></line>"##)
                        if !arrival.delivered {
                            svg.add(##"<text x="\##(format(x(arrival.atMs) - 4))" y="\##(format(target + 4))" font-size="11" fill="#757575">✕</text>"##)
                        }
                    }
                }
            }
        }

        func drawOperations(_ plan: [TimedEvent], into svg: inout SVG) {
            for timed in plan {
                let at = x(timed.timeMs)
                switch timed.event {
                case .set(let d, let key, let bytes):
                    svg.add(##"<circle cx="\##(format(at))" cy="\##(format(y(.device(d))))" r="3.5" fill="#0d47a1"><title>device \##(d) wrote key \##(key) (\##(bytes) bytes) at \##(timed.timeMs) ms</title></circle>"##)
                case .remove(let d, let key):
                    svg.add(##"<rect x="\##(format(at - 3))" y="\##(format(y(.device(d)) - 3))" width="6" height="6" fill="#c62828"><title>device \##(d) removed key \##(key) at \##(timed.timeMs) ms</title></rect>"##)
                case .synchronize(let d):
                    svg.add(##"<line x1="\##(format(at))" y1="\##(format(y(.device(d)) - 7))" x2="\##(format(at))" y2="\##(format(y(.device(d)) + 7))" stroke="#455a64"><title>device \##(d) called synchronize() at \##(timed.timeMs) ms</title></line>"##)
                default:
                    break
                }
            }
        }

        func drawConflicts(_ conflicts: [SimulationTimeline.Conflict], into svg: inout SVG) {
            for conflict in conflicts {
                let (cx, cy) = (x(conflict.atMs), y(conflict.lane) - 14)
                svg.add(##"<path d="M\##(format(cx)),\##(format(cy - 5)) L\##(format(cx + 5)),\##(format(cy)) L\##(format(cx)),\##(format(cy + 5)) L\##(format(cx - 5)),\##(format(cy)) z" fill="#f9a825" stroke="#6d4c00"><title>\##(escape("\(Self.name(conflict.lane)) holds concurrent values of \(conflict.keys.joined(separator: ", ")) from \(conflict.atMs) ms"))</title></path>"##)
            }
        }

        func drawMoments(_ timeline: SimulationTimeline, into svg: inout SVG) {
            if let healed = timeline.healedMs {
                svg.add(##"<line x1="\##(format(x(healed)))" y1="\##(format(Self.top - 6))" x2="\##(format(x(healed)))" y2="\##(format(height - 6))" stroke="#2e7d32" stroke-width="2" stroke-dasharray="6 4"><title>the network healed at \##(healed) ms</title></line>"##)
                svg.add(##"<text x="\##(format(x(healed) + 4))" y="\##(format(height - 8))" fill="#2e7d32" font-size="11">healed</text>"##)
            }
            if let violation = timeline.firstViolationMs {
                svg.add(##"<line id="first-violation" x1="\##(format(x(violation)))" y1="\##(format(Self.top - 6))" x2="\##(format(x(violation)))" y2="\##(format(height - 6))" stroke="#c62828" stroke-width="3"><title>the first violation was found at \##(violation) ms</title></line>"##)
                svg.add(##"<text x="\##(format(x(violation) + 4))" y="\##(format(Self.top + 10))" fill="#c62828" font-weight="700" font-size="12">first violation</text>"##)
            }
        }

        static func name(_ lane: SimulationTimeline.Lane) -> String {
            switch lane {
            case .hub: return "hub"
            case .device(let d): return "device \(d)"
            }
        }
    }
}

/// A coordinate with at most one decimal.
private func format(_ value: Double) -> String {
    let rounded = (value * 10).rounded() / 10
    return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
}
