import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the terminal allows: colour and cursor movement only on a terminal, and not when
/// `NO_COLOR` is set (to anything) or `TERM=dumb`.
enum Terminal {
    static func isTerminal(_ descriptor: Int32) -> Bool { isatty(descriptor) == 1 }

    static var plain: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["NO_COLOR"] != nil || environment["TERM"] == "dumb"
    }

    /// Drawing (bars, colour, cursor movement) on this descriptor.
    static func fancy(_ descriptor: Int32) -> Bool { isTerminal(descriptor) && !plain }

    /// The width of the terminal on this descriptor, else $COLUMNS, else 80.
    static func width(_ descriptor: Int32) -> Int {
        var size = winsize()
        if withUnsafeMutablePointer(to: &size, { ioctl(descriptor, UInt(TIOCGWINSZ), $0) }) == 0, size.ws_col > 0 {
            return Int(size.ws_col)
        }
        return ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init) ?? 80
    }

    static func write(_ text: String, to descriptor: Int32 = STDERR_FILENO) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { return }
            offset += written
        }
    }

    static let hideCursor = "\u{1B}[?25l"
    static let showCursor = "\u{1B}[?25h"
    static let clearLine = "\u{1B}[2K"
    static func up(_ lines: Int) -> String { lines > 0 ? "\u{1B}[\(lines)A" : "" }
    static func colour(_ code: Int, _ text: String) -> String { "\u{1B}[\(code)m\(text)\u{1B}[0m" }
}

/// Signals while drawing: SIGINT and SIGTERM run the registered clean-up (cursor back, raw mode
/// off, the re-attach message) and exit with the code it gives; SIGWINCH calls the resize hook.
/// Dispatch sources, not handlers, so the clean-up may do anything.
final class SignalWatch: @unchecked Sendable {
    static let shared = SignalWatch()
    private let queue = DispatchQueue(label: "transferctl.signals")
    private var sources: [DispatchSourceSignal] = []
    private var interrupt: (() -> Int32)?
    private var resize: (() -> Void)?

    /// `cleanUp` returns the exit code; it runs on a signal queue of its own.
    func onInterrupt(_ cleanUp: @escaping () -> Int32) {
        queue.sync { interrupt = cleanUp }
        install(SIGINT) { [unowned self] in exit(self.interrupt?() ?? 130) }
        install(SIGTERM) { [unowned self] in exit(self.interrupt?() ?? 143) }
    }

    func onResize(_ handler: @escaping () -> Void) {
        queue.sync { resize = handler }
        install(SIGWINCH) { [unowned self] in self.resize?() }
    }

    private func install(_ signalNumber: Int32, _ handler: @escaping () -> Void) {
        signal(signalNumber, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
        source.setEventHandler(handler: handler)
        source.resume()
        sources.append(source)
    }
}
