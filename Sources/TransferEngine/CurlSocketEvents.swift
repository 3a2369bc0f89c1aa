import CCurl
import CLinux
import Reactor

/// curl's event-driven multi interface ("multi_socket") on an `EventLoop`: watches the sockets curl
/// names (`CURLMOPT_SOCKETFUNCTION`), keeps its one timer (`CURLMOPT_TIMERFUNCTION`), runs
/// `curl_multi_socket_action` with each readiness and expiry, and hands every finished easy handle
/// to its owner by the handle's `CURLOPT_PRIVATE`. The transfer engine's loops and the replica
/// forwarder drive their multi handles through it. Used on the loop's thread only.
package final class CurlSocketEvents: @unchecked Sendable {
    private let loop: EventLoop
    private let multi: OpaquePointer
    /// The owner's handling of a finished easy handle: its `CURLOPT_PRIVATE` and its result.
    private var finished: (UnsafeMutableRawPointer, CURLcode) -> Void = { _, _ in }
    private var watchers: [Int32: SocketWatcher] = [:]
    private var timer: TimerID?
    /// The multi handle is being cleaned up: a timer still pending must not reach it.
    private var detached = false

    package init(multi: OpaquePointer, loop: EventLoop) {
        self.multi = multi
        self.loop = loop
    }

    /// Installs curl's callbacks; from now on every handle curl is done with goes to `finished`,
    /// never from inside a curl callback, so it may take the handle off the multi.
    package func start(_ finished: @escaping (_ context: UnsafeMutableRawPointer, _ result: CURLcode) -> Void) {
        self.finished = finished
        let m = UnsafeMutableRawPointer(multi), me = Unmanaged.passUnretained(self).toOpaque()
        _ = transferd_multi_setopt_socket_cb(m, curlSocketCallback)
        _ = transferd_multi_setopt_ptr(m, CURLMOPT_SOCKETDATA, me)
        _ = transferd_multi_setopt_timer_cb(m, curlTimerCallback)
        _ = transferd_multi_setopt_ptr(m, CURLMOPT_TIMERDATA, me)
    }

    /// Unsets the callbacks before `curl_multi_cleanup`, so its goodbyes to its sockets do not come here.
    package func detach() {
        detached = true
        _ = transferd_multi_setopt_socket_cb(UnsafeMutableRawPointer(multi), nil)
        _ = transferd_multi_setopt_timer_cb(UnsafeMutableRawPointer(multi), nil)
    }

    fileprivate func watch(_ fd: Int32, what: Int32) {
        if what == CURL_POLL_REMOVE {
            if let watcher = watchers.removeValue(forKey: fd) {
                watcher.removed = true
                loop.deregister(fd)
            }
            return
        }
        var events: UInt32 = 0
        if what & CURL_POLL_IN != 0 { events |= UInt32(EPOLLIN.rawValue) }
        if what & CURL_POLL_OUT != 0 { events |= UInt32(EPOLLOUT.rawValue) }
        if watchers[fd] != nil {
            loop.modify(fd, events: events)
        } else {
            let watcher = SocketWatcher(fd: fd, owner: self)
            watchers[fd] = watcher
            loop.register(fd, events: events, handler: watcher)
        }
    }

    /// Never calls curl from inside curl: a zero timeout is scheduled for the next loop turn.
    /// The timer holds this object, not a weak reference: the loop lets go of it when it fires,
    /// is replaced, or the loop stops, and a weak reference's side table, once this object was
    /// gone, was reported by LeakSanitizer as leaked.
    fileprivate func setTimer(_ timeoutMs: Int) {
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        guard timeoutMs >= 0 else { return }
        timer = loop.scheduleTimer(at: MonotonicClock.now() + UInt64(timeoutMs) * 1_000_000) { [self] in
            timer = nil
            ready(transferd_socket_bad(), flags: 0)
        }
    }

    /// `fd` is ready for what `flags` say (`CURL_CSELECT_…`), or the timer expired (`transferd_socket_bad()`, 0).
    fileprivate func ready(_ fd: Int32, flags: Int32) {
        guard !detached else { return }
        var running: Int32 = 0
        _ = curl_multi_socket_action(UnsafeMutableRawPointer(multi), fd, flags, &running)
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(UnsafeMutableRawPointer(multi), &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            var context: UnsafeMutableRawPointer?
            _ = transferd_easy_getinfo_ptr(easy, CURLINFO_PRIVATE, &context)
            if let context { finished(context, message.pointee.data.result) }
        }
    }
}

/// Watches one socket curl asked about, on the loop, and hands readiness back to curl.
private final class SocketWatcher: EventHandler, @unchecked Sendable {
    let fd: Int32
    unowned let owner: CurlSocketEvents
    var removed = false

    init(fd: Int32, owner: CurlSocketEvents) {
        self.fd = fd
        self.owner = owner
    }

    override func handleEvents(_ ready: UInt32) {
        guard !removed else { return }
        var flags: Int32 = 0
        if ready & UInt32(EPOLLIN.rawValue | EPOLLHUP.rawValue) != 0 { flags |= CURL_CSELECT_IN }
        if ready & UInt32(EPOLLOUT.rawValue) != 0 { flags |= CURL_CSELECT_OUT }
        if ready & UInt32(EPOLLERR.rawValue) != 0 { flags |= CURL_CSELECT_ERR }
        owner.ready(fd, flags: flags)
    }
}

private let curlSocketCallback: transferd_multi_socket_callback = { _, fd, what, userp, _ in
    Unmanaged<CurlSocketEvents>.fromOpaque(userp!).takeUnretainedValue().watch(fd, what: what)
    return 0
}

private let curlTimerCallback: transferd_multi_timer_callback = { _, timeoutMs, userp in
    Unmanaged<CurlSocketEvents>.fromOpaque(userp!).takeUnretainedValue().setTimer(timeoutMs)
    return 0
}
