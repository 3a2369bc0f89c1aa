import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session's event stream (`GET …/events` with `Accept: text/event-stream`), read as it arrives.
/// The generated client's transport buffers whole bodies on Linux, so this one request has a
/// reader of its own: a URLSession data task whose delegate receives the bytes piece by piece.
/// When the connection ends (transferd restarting, say) it reconnects with `Last-Event-ID`, so
/// nothing journaled is missed; each (re)connection is reported, for callers to re-read state
/// that live-only events (progress) may have skipped meanwhile.
struct EventStream: Sendable {
    enum Element: Sendable {
        case connected
        case event(ServerSentEvent)
    }

    let api: API
    let session: String
    /// Where to start: events with a greater seq (nil: after what was acknowledged).
    let after: Int?

    func elements() -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream { continuation in
            let reading = Task {
                var lastID = after.map(String.init)
                var failures = 0
                while !Task.isCancelled {
                    do {
                        for try await element in connection(lastEventID: lastID) {
                            failures = 0
                            if case .event(let event) = element, let id = event.id { lastID = id }
                            continuation.yield(element)
                        }
                    } catch let failure as Failure where failure.exitCode != 3 {
                        continuation.finish(throwing: failure)
                        return
                    } catch {
                        failures += 1
                    }
                    // Ended or refused: transferd may be restarting. Back off up to 2 s.
                    try? await Task.sleep(for: .milliseconds(min(2000, 200 * max(1, failures))))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in reading.cancel() }
        }
    }

    private func connection(lastEventID: String?) -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream { continuation in
            var components = URLComponents(url: api.baseURL, resolvingAgainstBaseURL: false)!
            let escaped = session.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? session
            components.percentEncodedPath += "/v1/sessions/\(escaped)/events"
            var request = URLRequest(url: components.url!)
            request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
            if let token = api.token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
            if let lastEventID { request.setValue(lastEventID, forHTTPHeaderField: "Last-Event-ID") }
            request.timeoutInterval = 3600
            let receiver = StreamReceiver(continuation: continuation)
            let urlSession = URLSession(configuration: .ephemeral, delegate: receiver, delegateQueue: nil)
            let task = urlSession.dataTask(with: request)
            continuation.onTermination = { _ in
                task.cancel()
                urlSession.invalidateAndCancel()
            }
            task.resume()
        }
    }
}

/// The delegate of one stream connection: checks the status, then parses bytes as they come.
/// URLSession calls it on its own serial delegate queue, so the parser needs no lock.
private final class StreamReceiver: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let continuation: AsyncThrowingStream<EventStream.Element, any Error>.Continuation
    private var parser = ServerSentEventParser()
    private var status = 0
    private var errorBody = Data()

    init(continuation: AsyncThrowingStream<EventStream.Element, any Error>.Continuation) {
        self.continuation = continuation
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        status = (response as? HTTPURLResponse)?.statusCode ?? 0
        if status == 200 { continuation.yield(.connected) }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard status == 200 else { errorBody.append(data); return }
        for event in parser.feed(data) { continuation.yield(.event(event)) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if status >= 400 && status != 503 {
            continuation.finish(throwing: Failure.forResponse(status: status, body: errorBody))
        } else if let error {
            continuation.finish(throwing: Failure.from(error) ?? Failure.unreachable("\(error)"))
        } else {
            continuation.finish()
        }
        session.finishTasksAndInvalidate()
    }
}
