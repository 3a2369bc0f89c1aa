import Glibc
import TransferAPI

/// The signals transferd acts on: SIGTERM and SIGINT stop it, SIGHUP re-reads the auth file.
extension Service {
    public enum Signal {
        case terminate(Int32)
        case reload
        /// `shutdownFinished()` was called (SIGUSR1, which the process sends itself).
        case shutdownFinished
        /// The timeout passed first.
        case timedOut
    }

    /// Blocks the calling thread until one of its signals arrives, or `timeout` seconds pass.
    /// Call `blockSignals` before any thread starts, so that only this thread sees them.
    public static func waitForSignal(timeout: Double? = nil) -> Signal {
        var set = handledSignals()
        var received: Int32 = 0
        if let timeout {
            var wait = timespec(tv_sec: Int(timeout), tv_nsec: Int((timeout - timeout.rounded(.down)) * 1e9))
            while true {
                received = sigtimedwait(&set, nil, &wait)
                if received >= 0 { break }
                if errno == EAGAIN { return .timedOut }
            }
        } else {
            while sigwait(&set, &received) != 0 {}
        }
        switch received {
        case SIGHUP: return .reload
        case SIGUSR1: return .shutdownFinished
        default: return .terminate(received)
        }
    }

    /// Wakes the thread in `waitForSignal` with `.shutdownFinished`, from the thread that ran
    /// `shutdown`: the waiting thread can then still act on a second signal meanwhile.
    public static func shutdownFinished() {
        kill(getpid(), SIGUSR1)
    }

    /// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread and every thread it creates later,
    /// and ignores SIGPIPE (writes to a closed socket must fail with EPIPE, not kill the process).
    public static func blockSignals() {
        signal(SIGPIPE, SIG_IGN)
        // Over RLIMIT_FSIZE a write must fail with EFBIG (the task then fails with
        // cannot_write_to_file), not kill the process.
        signal(SIGXFSZ, SIG_IGN)
        var set = handledSignals()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    private static func handledSignals() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGHUP)
        sigaddset(&set, SIGUSR1)
        return set
    }

    /// SIGHUP: reads the auth file again and puts it in force. A file that cannot be read or is
    /// invalid is reported and changes nothing: the principals in force stay.
    public func reloadAuthFile() {
        guard let path = configuration.authFile else {
            logger.info("SIGHUP ignored: no --auth-file is configured")
            return
        }
        do {
            let file = try AuthFile.load(path: path, roots: coordinator.allowedRoots)
            principals.replace(with: file)
            engine.bandwidthGroupsChanged()
            logger.info("auth file reloaded", metadata: ["path": .string(path), "principals": .stringConvertible(file.entries.count)])
        } catch {
            logger.error("auth file rejected; keeping the previous principals",
                         metadata: ["path": .string(path), "error": .string(error.description)])
        }
    }
}
