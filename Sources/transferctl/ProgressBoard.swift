import Foundation
import TransferdClient

/// The live progress of the tasks being waited for, one line each on stderr: bytes, percent, rate
/// and ETA. On a terminal that allows drawing the lines are redrawn in place with a bar, the cursor
/// hidden meanwhile; otherwise (a pipe, NO_COLOR, TERM=dumb) a plain line is written each time a
/// task passes another tenth, and when it ends — no colour, no cursor movement.
final class ProgressBoard: @unchecked Sendable {
    struct Row {
        var label: String
        var received: Int64 = 0
        var expected: Int64 = -1
        var rate: Double = 0
        var outcome: String?
        var failed = false
        var reportedTenth = -1
    }

    private let lock = NSLock()
    private let fancy: Bool
    private var order: [String] = []
    private var rows: [String: Row] = [:]
    private var drawnLines = 0
    private var width: Int
    private var finished = false

    init(fancy: Bool = Terminal.fancy(STDERR_FILENO)) {
        self.fancy = fancy
        width = Terminal.width(STDERR_FILENO)
        if fancy {
            Terminal.write(Terminal.hideCursor)
            SignalWatch.shared.onResize { [weak self] in self?.resized() }
        }
    }

    func add(_ id: String, label: String) {
        lock.withLock {
            if rows[id] == nil { order.append(id); rows[id] = Row(label: label) }
            draw()
        }
    }

    /// From a task (a GET, or a `task.progress` event's data): download or upload counters.
    func update(_ id: String, progress: Components.Schemas.Task.ProgressPayload) {
        let uploading = progress.bytesExpectedToSend > 0 && progress.bytesReceived == 0
        update(id, received: Int64(uploading ? progress.bytesSent : progress.bytesReceived),
               expected: Int64(uploading ? progress.bytesExpectedToSend : progress.bytesExpectedToReceive),
               rate: progress.bytesPerSecond)
    }

    func update(_ id: String, received: Int64, expected: Int64, rate: Double) {
        lock.withLock {
            guard var row = rows[id], row.outcome == nil else { return }
            row.received = received
            row.expected = expected
            row.rate = rate
            rows[id] = row
            draw()
        }
    }

    func complete(_ id: String, outcome: String, failed: Bool) {
        lock.withLock {
            guard var row = rows[id], row.outcome == nil else { return }
            if !failed, row.expected < 0 || row.received < row.expected { row.expected = row.received }
            row.outcome = outcome
            row.failed = failed
            rows[id] = row
            draw()
        }
    }

    /// Leaves the lines as they are and gives the cursor back; safe to call twice (exit and signal).
    func finish() {
        lock.withLock {
            guard fancy, !finished else { return }
            finished = true
            Terminal.write(Terminal.showCursor)
        }
    }

    private func resized() {
        lock.withLock {
            width = Terminal.width(STDERR_FILENO)
            // Lines wider than the new width may have wrapped: start the block afresh below.
            if drawnLines > 0 { Terminal.write("\n") }
            drawnLines = 0
            draw()
        }
    }

    private func draw() {
        guard !finished else { return }
        guard fancy else { return drawPlain() }
        var text = Terminal.up(drawnLines)
        for id in order { text += "\r" + Terminal.clearLine + line(rows[id]!, bar: true) + "\n" }
        drawnLines = order.count
        Terminal.write(text)
    }

    private func drawPlain() {
        for id in order {
            guard var row = rows[id] else { continue }
            let tenth = row.outcome != nil ? 11 : (row.expected > 0 ? Int(row.received * 10 / row.expected) : 0)
            guard tenth > row.reportedTenth else { continue }
            row.reportedTenth = tenth
            rows[id] = row
            Terminal.write(line(row, bar: false) + "\n")
        }
    }

    /// `label [####····]  45%  12.0 MiB / 26.7 MiB  4.1 MiB/s  ETA 0:04`, fitted to the width.
    private func line(_ row: Row, bar: Bool) -> String {
        let fraction = row.expected > 0 ? min(1, Double(row.received) / Double(row.expected)) : nil
        let percent = fraction.map { String(format: "%3d%%", Int($0 * 100)) } ?? "  ?%"
        let size = Format.bytes(row.received) + (row.expected >= 0 ? " / " + Format.bytes(row.expected) : "")
        var tail = "\(percent)  \(size)"
        if let outcome = row.outcome {
            tail += "  " + (fancy ? Terminal.colour(row.failed ? 31 : 32, outcome) : outcome)
        } else {
            tail += "  " + Format.bytes(Int64(row.rate)) + "/s"
            if row.rate > 0, row.expected > row.received {
                tail += "  ETA " + Format.duration(Double(row.expected - row.received) / row.rate)
            }
        }
        let visibleTail = tail.count - (fancy && row.outcome != nil ? 9 : 0)
        let labelWidth = min(max(8, width / 4), order.compactMap { rows[$0]?.label.count }.max() ?? 8)
        let label = String(row.label.prefix(labelWidth)).padding(toLength: labelWidth, withPad: " ", startingAt: 0)
        guard bar else { return label + "  " + tail }
        let barWidth = width - label.count - visibleTail - 6
        guard barWidth >= 5 else { return String((label + " " + tail).prefix(max(1, width - 1))) }
        let filled = Int((fraction ?? 0) * Double(barWidth))
        let cells = String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled)
        return "\(label) [\(Terminal.colour(row.failed ? 31 : 36, cells))] \(tail)"
    }
}

/// Human units for the progress line and the tables.
enum Format {
    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 { value /= 1024; unit += 1 }
        return unit == 0 ? "\(count) B" : String(format: "%.1f ", value) + units[unit]
    }

    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds < 360_000 else { return "--:--" }
        let total = Int(seconds.rounded(.up))
        return total >= 3600 ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
                             : String(format: "%d:%02d", total / 60, total % 60)
    }
}
