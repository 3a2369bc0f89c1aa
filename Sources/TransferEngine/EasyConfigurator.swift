import CCurl
import Glibc

/// Sets the options of an easy handle for one transfer. Everything that makes transfers safe by
/// default lives here: protocols, proxy, redirects, timeouts, the address check before connect.
/// What the session's configuration adds (cookies, credentials, TLS, proxy) is in
/// `EasyConfigurator+Session.swift`.
enum EasyConfigurator {
    static func configure(_ easy: OpaquePointer, for transfer: Transfer, share: OpaquePointer,
                          errorBuffer: UnsafeMutablePointer<CChar>, bufferSize: Int)
    {
        let h = UnsafeMutableRawPointer(easy)
        let spec = transfer.spec
        let me = Unmanaged.passUnretained(transfer).toOpaque()
        _ = transferd_easy_setopt_string(h, CURLOPT_URL, transfer.requestURL)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_PRIVATE, me)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_SHARE, UnsafeRawPointer(share))

        // Signals are the service's to handle (SIGPIPE is ignored, DNS timeouts use threads).
        _ = transferd_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1)
        // Only http and https, for the request and for every redirect: `file:`, `gopher:`, `dict:` and
        // the rest are `unsupported_url`.
        _ = transferd_easy_setopt_string(h, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = transferd_easy_setopt_string(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        _ = transferd_easy_setopt_long(h, CURLOPT_FOLLOWLOCATION, spec.followRedirects ? 1 : 0)
        _ = transferd_easy_setopt_long(h, CURLOPT_MAXREDIRS, max(0, spec.maxRedirects - transfer.redirectsBefore))
        configureSession(h, transfer)

        // Idle timeout: no byte moved for `idleTimeout`, watched by the loop's sweep
        // (`MultiLoop.sweepIdle`). LOW_SPEED_LIMIT/TIME would fire seconds late, since curl
        // averages the speed over its last few seconds.
        _ = transferd_easy_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, max(1, Int((spec.idleTimeout * 1000).rounded(.up))))
        if let total = spec.totalTimeout {
            _ = transferd_easy_setopt_long(h, CURLOPT_TIMEOUT_MS, max(1, Int(total * 1000)))
        }
        _ = transferd_easy_setopt_long(h, CURLOPT_BUFFERSIZE, bufferSize)
        _ = transferd_easy_setopt_long(h, CURLOPT_TCP_KEEPALIVE, 1)

        _ = transferd_easy_setopt_opensocket_cb(h, openSocketCallback)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_OPENSOCKETDATA, me)
        _ = transferd_easy_setopt_data_cb(h, CURLOPT_WRITEFUNCTION, writeCallback)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_WRITEDATA, me)
        _ = transferd_easy_setopt_data_cb(h, CURLOPT_HEADERFUNCTION, headerCallback)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_HEADERDATA, me)
        // Sees every request before it goes out, and refuses curl's silent re-send of one the
        // origin may have acted on (`RequestSends`). Of the ways to stop that re-send this is
        // the one that covers every request (a body that cannot be rewound leaves out requests
        // without one) and costs no connection. Measured with bench/once.py (500 POST data tasks
        // of 200 bytes on loopback, medians of 6 runs, transferd's CPU): 0.30 s and 6
        // connections with this callback, 0.32 s and 6 without (the difference is noise), 0.44 s
        // and 500 connections with CURLOPT_FRESH_CONNECT for every non-idempotent request — and
        // over TLS that would be a handshake per POST.
        _ = transferd_easy_setopt_prereq_cb(h, prereqCallback)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_PREREQDATA, me)

        configureMethodAndBody(h, transfer.requestMethod, transfer.sendsBody ? transfer.files.body : .none, transfer)
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in transfer.requestHeaders { list = curl_slist_append(list, "\(name): \(value)") }
        for (name, value) in transfer.files.headers { list = curl_slist_append(list, "\(name): \(value)") }
        if let resume = transfer.files.resume {
            _ = transferd_easy_setopt_string(h, CURLOPT_RANGE, "\(resume.offset)-")
            if let validator = resume.validator { list = curl_slist_append(list, "If-Range: \(validator)") }
        }
        if let list { _ = transferd_easy_setopt_slist(h, CURLOPT_HTTPHEADER, list) }
        transfer.headerList = list
    }

    private static func configureMethodAndBody(_ h: UnsafeMutableRawPointer, _ method: String, _ body: RequestBodySource,
                                               _ transfer: Transfer)
    {
        switch method {
        case "GET": break
        case "HEAD": _ = transferd_easy_setopt_long(h, CURLOPT_NOBODY, 1)
        case "POST" where isStreamed(body), "PUT" where isStreamed(body): break
        default: _ = transferd_easy_setopt_string(h, CURLOPT_CUSTOMREQUEST, method)
        }
        switch body {
        case .none:
            break
        case .bytes(let bytes):
            // COPYPOSTFIELDS copies, so the easy handle never points into Swift-managed memory.
            _ = transferd_easy_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count))
            if bytes.isEmpty {
                _ = transferd_easy_setopt_string(h, CURLOPT_COPYPOSTFIELDS, "")
            } else {
                _ = bytes.withUnsafeBytes { transferd_easy_setopt_ptr(h, CURLOPT_COPYPOSTFIELDS, $0.baseAddress!) }
            }
        case .segments:
            // Streamed through CURLOPT_READFUNCTION; the seek callback rewinds it when curl must
            // send it again (a 307/308 redirect, an authentication round).
            let total = curl_off_t(body.totalLength)
            switch method {
            case "POST":
                _ = transferd_easy_setopt_long(h, CURLOPT_POST, 1)
                _ = transferd_easy_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, total)
            default:
                // PUT, or any other method with PUT's body semantics (CUSTOMREQUEST names it).
                _ = transferd_easy_setopt_long(h, CURLOPT_UPLOAD, 1)
                _ = transferd_easy_setopt_off(h, CURLOPT_INFILESIZE_LARGE, total)
            }
            _ = transferd_easy_setopt_data_cb(h, CURLOPT_READFUNCTION, readCallback)
            _ = transferd_easy_setopt_ptr(h, CURLOPT_READDATA, Unmanaged.passUnretained(transfer).toOpaque())
            _ = transferd_easy_setopt_seek_cb(h, seekCallback)
            _ = transferd_easy_setopt_ptr(h, CURLOPT_SEEKDATA, Unmanaged.passUnretained(transfer).toOpaque())
            // Large reads: fewer callbacks and syscalls per byte (curl's maximum is 2 MiB).
            _ = transferd_easy_setopt_long(h, CURLOPT_UPLOAD_BUFFERSIZE, 2 << 20)
        }
    }
}

private func isStreamed(_ body: RequestBodySource) -> Bool {
    if case .segments = body { return true }
    return false
}

private let readCallback: transferd_data_callback = { ptr, size, count, userdata in
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    return transfer.read(into: UnsafeMutableRawBufferPointer(start: ptr, count: size * count))
}

private let seekCallback: transferd_seek_callback = { userdata, offset, origin in
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    return origin == SEEK_SET && transfer.seek(to: Int64(offset)) ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_CANTSEEK
}

private let prereqCallback: transferd_prereq_callback = { clientp, remoteIP, _, remotePort, localPort in
    let transfer = Unmanaged<Transfer>.fromOpaque(clientp!).takeUnretainedValue()
    let connection = remoteIP.map { ConnectionEnds(remoteIP: String(cString: $0), remotePort: remotePort, localPort: localPort) }
    return transfer.sends.requestBeginning(on: connection) ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT
}

/// CURLOPT_OPENSOCKETFUNCTION: sees the resolved address before every connect (redirects and DNS
/// rebinding included) and refuses what the network policy forbids.
private let openSocketCallback: transferd_opensocket_callback = { clientp, purpose, address in
    let transfer = Unmanaged<Transfer>.fromOpaque(clientp!).takeUnretainedValue()
    guard let address else { return transferd_socket_bad() }
    let family = address.pointee.family
    let ip: IPAddress
    switch family {
    case AF_INET:
        ip = withUnsafePointer(to: &address.pointee.addr) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { IPAddress(ipv4: $0.pointee.sin_addr) }
        }
    case AF_INET6:
        ip = withUnsafePointer(to: &address.pointee.addr) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { IPAddress(ipv6: $0.pointee.sin6_addr) }
        }
    default:
        return transferd_socket_bad()
    }
    // IPv4-mapped IPv6 addresses are stored as such, so one check covers both spellings.
    guard transfer.policy.permits(ip) else {
        transfer.blockedAddress = ip.description
        return transferd_socket_bad()
    }
    return socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
}

private let writeCallback: transferd_data_callback = { ptr, size, count, userdata in
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    return transfer.write(UnsafeRawBufferPointer(start: ptr, count: size * count))
}

private let headerCallback: transferd_data_callback = { ptr, size, count, userdata in
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    return transfer.header(UnsafeRawBufferPointer(start: ptr, count: size * count))
}
