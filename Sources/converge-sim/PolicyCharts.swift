import ConvergeSimulation
import Foundation

/// `compare --html`: each metric as an SVG chart in one self-contained page, a bar per
/// policy at its mean over the seeds with its 95% confidence interval as a whisker, and
/// the paired difference from the first policy beside it.
enum PolicyCharts {
    static let colors = ["#1565c0", "#2e7d32", "#ef6c00", "#6a1b9a", "#c62828", "#00838f", "#5d4037"]

    static func html(_ rows: [(policy: PolicyName, results: [SimulationResult])], scenario: String, seeds: [UInt64]) -> String {
        var charts: [String] = []
        for metric in PolicyMetric.all {
            let figures = rows.map { row in (row.policy, MeanInterval(row.results.compactMap { metric.value($0.metrics) })) }
            guard figures.contains(where: { $0.1 != nil }) else { continue }
            let differences = rows.dropFirst().map { row in
                MeanInterval(pairedDifferences: CompareCommand.bySeed(rows[0].results, metric), CompareCommand.bySeed(row.results, metric))
            }
            charts.append(chart(metric.name, figures: figures, differences: differences, baseline: rows[0].policy))
        }
        let passed = rows.map { "\($0.policy.rawValue) \($0.results.filter(\.passed).count)/\($0.results.count)" }.joined(separator: ", ")
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape("policies on \(scenario)"))</title>
            <style>
            body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
            h1 { font-size: 18px; } figure { display: inline-block; margin: 8px 16px 16px 0; vertical-align: top; }
            figcaption { font-weight: 600; margin-bottom: 4px; }
            </style></head><body>
            <h1>Policies compared on scenario “\(escape(scenario))”, seeds \(seeds.first!)..&lt;\(seeds.last! + 1)</h1>
            <p>The same histories for every policy. Bars: the mean per run; whiskers: the 95% confidence interval
            (Student's t); beside each chart, the difference from \(escape(rows[0].policy.rawValue)) paired on each seed.
            Runs passed: \(escape(passed)).</p>
            \(charts.joined(separator: "\n"))
            <script>document.body.setAttribute("data-ready", "yes");</script>
            </body></html>

            """
    }

    /// One metric: a horizontal bar per policy.
    static func chart(_ name: String, figures: [(PolicyName, MeanInterval?)], differences: [MeanInterval?], baseline: PolicyName) -> String {
        let left = 110.0, barHeight = 22.0, gap = 8.0, plotWidth = 300.0
        let highs = figures.compactMap { $0.1.map { $0.mean + ($0.halfWidth.isNaN ? 0 : $0.halfWidth) } }
        let lows = figures.compactMap { $0.1.map { $0.mean - ($0.halfWidth.isNaN ? 0 : $0.halfWidth) } }
        let maximum = max(highs.max() ?? 1, 0), minimum = min(lows.min() ?? 0, 0)
        let span = max(maximum - minimum, 1e-9)
        func x(_ value: Double) -> Double { left + (value - minimum) / span * plotWidth }
        var elements: [String] = []
        elements.append(##"<line x1="\##(x(0))" y1="0" x2="\##(x(0))" y2="\##(Double(figures.count) * (barHeight + gap))" stroke="#9e9e9e"/>"##)
        for (index, (policy, figure)) in figures.enumerated() {
            let top = Double(index) * (barHeight + gap)
            let color = colors[index % colors.count]
            elements.append(##"<text x="0" y="\##(top + barHeight * 0.7)">\##(escape(policy.rawValue))</text>"##)
            guard let figure else {
                elements.append(##"<text x="\##(left)" y="\##(top + barHeight * 0.7)" fill="#757575">no value</text>"##)
                continue
            }
            let start = min(x(0), x(figure.mean)), width = max(1, abs(x(figure.mean) - x(0)))
            elements.append(##"<rect x="\##(start)" y="\##(top)" width="\##(width)" height="\##(barHeight)" fill="\##(color)" opacity="0.8"><title>\##(escape("\(policy.rawValue): \(figure.text)"))</title></rect>"##)
            if !figure.halfWidth.isNaN {
                let (low, high, middle) = (x(figure.mean - figure.halfWidth), x(figure.mean + figure.halfWidth), top + barHeight / 2)
                elements.append(##"<path d="M\##(low),\##(middle) H\##(high) M\##(low),\##(middle - 6) V\##(middle + 6) M\##(high),\##(middle - 6) V\##(middle + 6)" stroke="#212121" stroke-width="1.5" fill="none"/>"##)
            }
            elements.append(##"<text x="\##(left + plotWidth + 12)" y="\##(top + barHeight * 0.7)">\##(escape(figure.text))</text>"##)
            if index > 0, let difference = differences[index - 1] {
                elements.append(##"<text x="\##(left + plotWidth + 150)" y="\##(top + barHeight * 0.7)" fill="#455a64">\##(escape("\(difference.mean >= 0 ? "+" : "")\(difference.text) vs \(baseline.rawValue)"))</text>"##)
            }
        }
        let height = Double(figures.count) * (barHeight + gap)
        return """
            <figure><figcaption>\(escape(name))</figcaption>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(left + plotWidth + 330)" height="\(height)">
            \(elements.joined(separator: "\n"))
            </svg></figure>
            """
    }

    static func escape(_ text: String) -> String { SpaceTimeDiagram.escape(text) }
}
