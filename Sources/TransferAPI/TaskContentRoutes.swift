import Glibc
import HTTPServer
import TransferCore
import TransferModel

/// `GET …/tasks/{task}/body` (the response body of a data task) and `GET|HEAD …/tasks/{task}/file`
/// (a download's file, with `Range`). Files go out with sendfile(2), never through memory.
struct TaskContentRoutes {
    let coordinator: TaskCoordinator

    func register(in table: inout APIRouteTable) {
        let coordinator = coordinator
        table.add("GET", "/v1/sessions/{identifier}/tasks/{task}/body", .session) { request, _, responder in
            TaskActionRoutes.target(request, coordinator, responder) { session, id throws(Refusal) in
                coordinator.record(session, id) { read in
                    RouteSupport.answer(responder) { () throws(Refusal) in
                        let record = try read.get()
                        // A task failed with `http_error` keeps the origin's error body here, a download's too.
                        let failedWithBody = record.error?.code == .httpError
                        guard record.kind != .download || failedWithBody else {
                            throw Refusal(.conflict, "not_a_data_task", "task \(id) is a download; its content is at …/file")
                    }
                    guard record.isCompleted, record.error == nil || failedWithBody else {
                        throw Refusal(.conflict, "body_not_available", "task \(id) has no response body (it is \(record.state.rawValue)\(record.error.map { ", \($0.code.rawValue)" } ?? ""))")
                    }
                    let contentType = TaskContentRoutes.contentType(record)
                    if let memory = session.locked({ session.tasks[id]?.memoryBody }) {
                        responder.respond(HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", contentType)]), body: .bytes(memory)))
                        return
                    }
                    guard let path = record.bodyLocation else { throw Refusal(.gone, "body_gone", "the body of task \(id) is no longer kept") }
                    responder.respond(try TaskContentRoutes.serve(path: path, contentType: contentType, request: request,
                                                                  open: { open(path, O_RDONLY | O_CLOEXEC) }))
                    }
                }
            }
        }
        table.add("GET", "/v1/sessions/{identifier}/tasks/{task}/file", .session) { request, _, responder in
            TaskActionRoutes.target(request, coordinator, responder) { session, id throws(Refusal) in
                coordinator.record(session, id) { read in
                    RouteSupport.answer(responder) { () throws(Refusal) in
                        let record = try read.get()
                        guard record.kind == .download else {
                            throw Refusal(.conflict, "not_a_download", "task \(id) is not a download; its response is at …/body")
                    }
                    guard let result = record.result else {
                        throw Refusal(.conflict, "file_not_available", "task \(id) has no file (it is \(record.state.rawValue)\(record.error.map { ", \($0.code.rawValue)" } ?? ""))")
                    }
                    let contentType = TaskContentRoutes.contentType(record)
                    responder.respond(try TaskContentRoutes.serve(path: result.location, contentType: contentType, request: request) {
                        // A client's destination is reopened beneath its allowed root, so a file
                        // swapped for a symlink since is not followed out of it.
                        record.destination == nil ? open(result.location, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                            : ((try? coordinator.allowedRoots.openFile(result.location, flags: O_RDONLY)) ?? -1)
                    })
                    }
                }
            }
        }
    }

    /// The origin's Content-Type as it sent it (parameters such as charset included).
    static func contentType(_ record: TaskRecord) -> String {
        record.response?.headers.last { $0.name.lowercased() == "content-type" }?.value ?? "application/octet-stream"
    }

    /// A file as a static file server answers for it: validators, 304 for a current copy, and
    /// the whole file, one range, or several as `multipart/byteranges` (RFC 9110 §14.6).
    static func serve(path: String, contentType: String, request: HTTPRequest, open: () -> Int32) throws(Refusal) -> HTTPResponse {
        let fd = open()
        guard fd >= 0 else { throw Refusal(.gone, "file_gone", "the file is no longer there") }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            close(fd)
            throw Refusal(.gone, "file_gone", "the file is no longer there")
        }
        let size = Int(st.st_size)
        let validators = FileValidators(st)
        var headers = HTTPHeaders(validators.headers)
        if validators.notModified(request) {
            close(fd)
            return HTTPResponse(status: 304, headers: headers)
        }
        let range = validators.rangeApplies(request) ? request.headers["range"] : nil
        switch ByteRange.resolve(range, size: size) {
        case .whole:
            headers.add("Content-Type", contentType)
            return HTTPResponse(status: 200, headers: headers, body: .file(FileRegion(fd: fd, offset: 0, count: size)))
        case .parts(let ranges) where ranges.count == 1:
            let r = ranges[0]
            headers.add("Content-Type", contentType)
            headers.add("Content-Range", "bytes \(r.lowerBound)-\(r.upperBound)/\(size)")
            return HTTPResponse(status: 206, headers: headers, body: .file(FileRegion(fd: fd, offset: r.lowerBound, count: r.count)))
        case .parts(let ranges):
            let boundary = "transferd-" + RandomID.make()
            headers.add("Content-Type", "multipart/byteranges; boundary=\(boundary)")
            // Each part: delimiter, its own Content-Type and Content-Range, a blank line, the bytes.
            let parts = ranges.enumerated().map { i, r in
                FileParts.Part(head: Array("\(i == 0 ? "" : "\r\n")--\(boundary)\r\nContent-Type: \(contentType)\r\nContent-Range: bytes \(r.lowerBound)-\(r.upperBound)/\(size)\r\n\r\n".utf8),
                               offset: r.lowerBound, count: r.count)
            }
            return HTTPResponse(status: 206, headers: headers,
                                body: .fileParts(FileParts(fd: fd, parts: parts, trailer: Array("\r\n--\(boundary)--\r\n".utf8))))
        case .unsatisfiable:
            close(fd)
            var problem = Refusal(.rangeNotSatisfiable, "range_not_satisfiable", "the file has \(size) bytes").response
            problem.headers.add("Content-Range", "bytes */\(size)")
            return problem
        }
    }
}
