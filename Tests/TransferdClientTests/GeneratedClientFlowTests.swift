import Foundation
import Glibc
import OpenAPIRuntime
import OpenAPIURLSession
import TestSupport
import Testing
import TransferdClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The generated client, with its default settings, against a real transferd: sessions of each
/// mode with configuration and delegate, a download, a data task and an upload from a blob, waited
/// for with their results, files and bodies; every list paged; events read and acknowledged; a
/// download cancelled with resume data and resumed from it; a problem read as a typed value.
@Suite struct GeneratedClientFlowTests {
    typealias Schemas = Components.Schemas

    static func client(_ transferd: TransferdProcess) -> Client {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["Authorization": "Bearer \(transferd.token)"]
        let transport = URLSessionTransport(configuration: .init(session: URLSession(configuration: configuration)))
        return Client(serverURL: transferd.baseURL, transport: transport)
    }

    /// Whether LeakSanitizer watches this process (`make asan`): FoundationNetworking's URLSession,
    /// the generated client's transport, leaves what libcurl allocates for its requests unfreed,
    /// and LeakSanitizer cannot trace those allocations past libcurl to tell them from ours, so
    /// the flow (which checks the client and the service, not memory) runs in the other builds.
    static let leakChecked = dlsym(nil, "__lsan_do_leak_check") != nil

    @Test(.disabled(if: leakChecked, "URLSession's libcurl allocations are not freed (see leakChecked)"))
    func theGeneratedClientRunsTheWholeFlow() async throws {
        let transferd = try TransferdProcess()
        let origin = try TestOrigin()
        let client = Self.client(transferd)

        // Sessions of each mode, configured, with a delegate; a re-attach that names neither keeps both.
        let configuration = Schemas.SessionConfiguration(
            headers: .HeaderFields(.init(additionalProperties: ["X-Flow": "swift"])),
            credentials: [.bearer(.init(host: "127.0.0.1", scheme: .bearer, token: "s3cr3t"))])
        var identifiers: [String] = []
        for mode in [Schemas.SessionPut.ModePayload.background, ._default, .ephemeral] {
            let sid = "com.example.swift.\(mode.rawValue)"
            identifiers.append(sid)
            let put = Schemas.SessionPut(mode: mode, configuration: .SessionConfiguration(configuration),
                                         delegate: .DelegateSettings(.init(url: origin.url("/bytes/1"))))
            let created = try await client.putSession(path: .init(identifier: sid), body: .json(put)).created.body.json
            #expect(created.mode.rawValue == mode.rawValue)
            #expect(created.delegate?.secret?.hasPrefix("whsec_") == true)
            #expect(created.configuration.headers.additionalProperties == ["X-Flow": "swift"])
            #expect(created.configuration.credentials.first?.token?.rawValue == "<redacted>")
            let reattached = try await client.putSession(path: .init(identifier: sid), body: .json(.init(mode: mode))).ok.body.json
            #expect(reattached.configuration.credentials.count == 1 && reattached.delegate?.url == origin.url("/bytes/1"))
        }
        let sid = "com.example.swift.default"
        #expect(try await client.getSession(path: .init(identifier: sid)).ok.body.json.identifier == sid)
        let listed = try await Pages.all { after in
            let page = try await client.listSessions(query: .init(limit: 1, after: after)).ok.body.json
            return (page.sessions.map(\.identifier), page.next)
        }
        #expect(Set(identifiers).isSubset(of: listed))

        // A download, a data task and an upload from a blob, waited for, with their results.
        func create(_ creation: Schemas.TaskCreation) async throws -> Schemas.Task {
            try await client.createTask(path: .init(identifier: sid), body: .json(creation)).created.body.json
        }
        func wait(_ task: Schemas.Task) async throws -> Schemas.Task {
            let done = try await client.getTask(path: .init(identifier: sid, task: task.id), query: .init(wait: 30)).ok.body.json
            #expect(done.state == .completed && done.error == nil)
            return done
        }
        let download = try await wait(create(.init(kind: .download, request: .init(url: origin.url("/bytes/20000")))))
        #expect(download.result?.size == 20000)
        let file = try await client.getTaskFile(path: .init(identifier: sid, task: download.id)).ok.body.any
        #expect(try await Data(collecting: file, upTo: 1 << 20) == Data(TestOrigin.content(20000)))
        let data = try await wait(create(.init(kind: .data, request: .init(url: origin.url("/bytes/300")))))
        let body = try await client.getTaskBody(path: .init(identifier: sid, task: data.id)).ok.body.any
        #expect(try await Data(collecting: body, upTo: 1 << 20) == Data(TestOrigin.content(300)))
        let bytes = Data(repeating: 7, count: 900)
        let blob = try await client.createBlob(body: .binary(HTTPBody(bytes))).created.body.json
        #expect(blob.size == 900)
        let upload = try await wait(create(.init(kind: .upload, request: .init(url: origin.url("/bytes/1"), method: "POST"),
                                                 upload: .UploadFromBlob(.init(fromBlob: blob.id)))))
        #expect(upload.request.body?.blob == blob.id && upload.response != nil)
        let tasks = try await Pages.all { after in
            let page = try await client.listTasks(path: .init(identifier: sid), query: .init(limit: 1, after: after)).ok.body.json
            return (page.tasks.map(\.id), page.next)
        }
        #expect(Set(tasks) == [download.id, data.id, upload.id])

        // A download caught mid-way, cancelled with resume data, then resumed from it.
        let stalled = try await create(.init(kind: .download, request: .init(url: origin.url("/stall-once/100000?key=swift"))))
        var progressed = false
        for _ in 0..<400 where !progressed {
            progressed = try await client.getTask(path: .init(identifier: sid, task: stalled.id)).ok.body.json.progress.bytesReceived > 0
            if !progressed { try await Task.sleep(for: .milliseconds(50)) }
        }
        let cancelled = try await client.cancelTask(path: .init(identifier: sid, task: stalled.id),
                                                    body: .json(.init(produceResumeData: true))).ok.body.json
        let resumeData = try #require(cancelled.error?.resumeData)
        #expect(cancelled.error?.code == "cancelled")
        let resumed = try await wait(create(.init(kind: .download, resumeData: resumeData)))
        #expect(resumed.result?.size == 100000)

        // Events, a page at a time from the first, acknowledged.
        var seqs: [Int] = []
        var cursor = "0"
        while true {
            let page = try await client.listEvents(path: .init(identifier: sid), query: .init(after: cursor, limit: 2)).ok.body.json
            if page.events.isEmpty { break }
            seqs += page.events.map(\.seq)
            cursor = page.next
        }
        #expect(seqs == Array(1...seqs.count))
        let acked = try await client.acknowledgeEvents(path: .init(identifier: sid), body: .json(.init(through: seqs.last!))).ok.body.json
        #expect(acked.ackedThrough == seqs.last!)

        // The delegate's delivery attempts (recorded shortly after each ends) and the cookie jar.
        var deliveries: [Schemas.DeliveryAttempt] = []
        for _ in 0..<200 where deliveries.isEmpty {
            deliveries = try await Pages.all { after in
                let page = try await client.listDeliveries(path: .init(identifier: sid), query: .init(limit: 1, after: after)).ok.body.json
                return (page.deliveries, page.next)
            }
            if deliveries.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(!deliveries.isEmpty)
        let cookies = try await Pages.all { after in
            let page = try await client.listSessionCookies(path: .init(identifier: sid), query: .init(limit: 1, after: after)).ok.body.json
            return (page.cookies, page.next)
        }
        #expect(cookies.isEmpty)

        // A problem document, as a typed value.
        let missing = try await client.getSession(path: .init(identifier: "com.example.swift.none"))
        let problem = try missing.notFound.body.applicationProblemJson
        #expect(problem.status == 404 && problem.code == "not_found")
    }
}
