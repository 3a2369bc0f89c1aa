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
            RouteSupport.answer(responder) { () throws(Refusal) in
                let (session, id) = try TaskActionRoutes.target(request, coordinator)
                let record = try coordinator.record(session, id)
                guard record.kind != .download else {
                    throw Refusal(.conflict, "not_a_data_task", "task \(id) is a download; its content is at …/file")
                }
                guard record.isCompleted, record.error == nil else {
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
        table.add("GET", "/v1/sessions/{identifier}/tasks/{task}/file", .session) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                let (session, id) = try TaskActionRoutes.target(request, coordinator)
                let record = try coordinator.record(session, id)
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

    /// The origin's Content-Type as it sent it (parameters such as charset included).
    static func contentType(_ record: TaskRecord) -> String {
        record.response?.headers.last { $0.name.lowercased() == "content-type" }?.value ?? "application/octet-stream"
    }

    /// A whole file or one range of it.
    static func serve(path: String, contentType: String, request: HTTPRequest, open: () -> Int32) throws(Refusal) -> HTTPResponse {
        let fd = open()
        guard fd >= 0 else { throw Refusal(.gone, "file_gone", "the file is no longer there") }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            close(fd)
            throw Refusal(.gone, "file_gone", "the file is no longer there")
        }
        let size = Int(st.st_size)
        var headers = HTTPHeaders([("Content-Type", contentType), ("Accept-Ranges", "bytes")])
        switch ByteRange.resolve(request.headers["range"], size: size) {
        case .whole:
            return HTTPResponse(status: 200, headers: headers, body: .file(FileRegion(fd: fd, offset: 0, count: size)))
        case .part(let start, let end):
            headers.add("Content-Range", "bytes \(start)-\(end)/\(size)")
            return HTTPResponse(status: 206, headers: headers, body: .file(FileRegion(fd: fd, offset: start, count: end - start + 1)))
        case .unsatisfiable:
            close(fd)
            var problem = Refusal(.rangeNotSatisfiable, "range_not_satisfiable", "the file has \(size) bytes").response
            problem.headers.add("Content-Range", "bytes */\(size)")
            return problem
        }
    }
}
