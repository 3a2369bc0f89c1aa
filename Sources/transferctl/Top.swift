import ArgumentParser
import Foundation
import TransferdClient

#if canImport(Glibc)
import Glibc
#endif

struct Top: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A live table of running tasks in every session this token may see.",
        discussion: """
        Refreshes in place every --interval seconds; quit with q or Ctrl-C. When stdout is not a \
        terminal that allows drawing (a pipe, NO_COLOR, TERM=dumb) it prints the table once.

        Examples:
          transferctl top
          transferctl top --interval 5
          transferctl top --json | jq -r .id
        """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "Seconds between refreshes.") var interval: Double = 1

    typealias Task = Components.Schemas.Task

    func run() async throws {
        let api = try global.api()
        guard Terminal.fancy(STDOUT_FILENO), !api.output.json else {
            return api.output.rows(try await Self.running(api), Self.columns, json: .listed("listTasks", member: "tasks"))
        }
        let keyboard = RawKeyboard()
        SignalWatch.shared.onInterrupt {
            keyboard.restore()
            return 130
        }
        SignalWatch.shared.onResize {}
        keyboard.onKey { key in
            if key == UInt8(ascii: "q") || key == UInt8(ascii: "Q") {
                keyboard.restore()
                Glibc.exit(0)
            }
        }
        while true {
            let tasks = try await Self.running(api)
            let stats = try await api.client.getStats().ok.body.json
            Terminal.write(Self.screen(tasks, stats: stats), to: STDOUT_FILENO)
            try await _Concurrency.Task.sleep(for: .milliseconds(Int(max(0.2, interval) * 1000)))
        }
    }

    static let columns: [Output.Column<Task>] = [
        .init("SESSION") { $0.session },
        .init("TASK") { $0.id },
        .init("PROGRESS") { Tasks.progress($0) },
        .init("RATE") { Format.bytes(Int64($0.progress.bytesPerSecond)) + "/s" },
        .init("URL") { $0.request.url },
    ]

    /// The running tasks of every session with any, fastest first.
    static func running(_ api: API) async throws -> [Task] {
        let sessions = try await Pages.all { after in
            let page = try await api.client.listSessions(query: .init(after: after)).ok.body.json
            return (page.sessions.filter { $0.tasks.value1.running > 0 }, page.next)
        }
        var tasks: [Task] = []
        for session in sessions {
            tasks += try await Pages.all { after in
                let page = try await api.client.listTasks(
                    path: .init(identifier: session.identifier), query: .init(state: .running, after: after)).ok.body.json
                return (page.tasks, page.next)
            }
        }
        return tasks.sorted { $0.progress.bytesPerSecond > $1.progress.bytesPerSecond }
    }

    /// The whole screen: home, a summary line, the table cut to the terminal's width and height.
    static func screen(_ tasks: [Task], stats: Components.Schemas.Stats) -> String {
        var size = winsize()
        let height = withUnsafeMutablePointer(to: &size, { ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), $0) }) == 0 && size.ws_row > 0
            ? Int(size.ws_row) : 24
        let width = Terminal.width(STDOUT_FILENO)
        let summary = "transferctl top — \(tasks.count) running, \(stats.queueDepth) queued, "
            + "down \(Format.bytes(Int64(stats.bytesPerSecond.down)))/s, up \(Format.bytes(Int64(stats.bytesPerSecond.up)))/s"
            + "   (q to quit)"
        let table = Output.table(header: columns.map(\.header), rows: tasks.map { task in columns.map { $0.value(task) } }, bold: false)
        var lines = [String(summary.prefix(width)), ""] + table.split(separator: "\n").map { String($0.prefix(width)) }
        lines = Array(lines.prefix(max(3, height - 1)))
        lines[2] = Terminal.colour(7, lines[2])
        return "\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n") + "\r\n\u{1B}[J"
    }
}

/// The terminal in non-canonical mode without echo while `top` runs, so one key press is read at
/// once; signals (Ctrl-C) still arrive. `restore` puts back the settings and the cursor, and is
/// safe to call twice.
final class RawKeyboard: @unchecked Sendable {
    private var saved = termios()
    private let lock = NSLock()
    private var active = false

    init() {
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        active = true
        Terminal.write("\u{1B}[?1049h" + Terminal.hideCursor + "\u{1B}[2J", to: STDOUT_FILENO)
    }

    func onKey(_ handler: @escaping @Sendable (UInt8) -> Void) {
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(STDIN_FILENO, &byte, 1) == 1 { handler(byte) }
        }
    }

    func restore() {
        lock.withLock {
            guard active else { return }
            active = false
            var settings = saved
            tcsetattr(STDIN_FILENO, TCSANOW, &settings)
            Terminal.write(Terminal.showCursor + "\u{1B}[?1049l", to: STDOUT_FILENO)
        }
    }
}
