import HTTPServer
import TransferCore
import TransferModel

/// `/v1/blobs…`: upload bytes for later upload tasks, read a blob's facts, delete it. A blob
/// belongs to the principal that stored it; the access gate hides it from every other (but admins).
struct BlobRoutes {
    let coordinator: TaskCoordinator
    let maxBlobBytes: Int64

    func register(in table: inout APIRouteTable) {
        let coordinator = coordinator, maxBlobBytes = maxBlobBytes, ledger = table.ledger
        table.addStreamed("POST", "/v1/blobs", .service) { request, principal throws(HTTPProblem) in
            guard let blobs = coordinator.blobs else { throw HTTPProblem(503, "store_unavailable", "blobs need the store") }
            var declared: Int64?
            if case .length(let n) = request.head.framing { declared = Int64(n) }
            return try BlobUploadSink(blobs: blobs, principal: principal.name, maxBytes: maxBlobBytes, declaredLength: declared,
                                      admit: { sha256, responder, discard, store in
                                          ledger.guarded(request, principal, responder, bodyHash: sha256, declined: discard, store)
                                      }) { work in
                coordinator.fileWork.async(execute: work)
            }
        }
        table.add("GET", "/v1/blobs/{blob}", .blob) { request, principal, responder in
            BlobRoutes.permitted(request, principal, coordinator, responder) { blob in
                responder.respond(RouteSupport.json { blob.encode(into: &$0) })
            }
        }
        table.add("DELETE", "/v1/blobs/{blob}", .blob) { request, principal, responder in
            BlobRoutes.permitted(request, principal, coordinator, responder) { blob in
                coordinator.deleteBlob(blob) { result in
                    switch result {
                    case .success: responder.respond(HTTPResponse(status: 204))
                    case .failure(let error): responder.respond(error.response)
                    }
                }
            }
        }
    }

    /// Hands `act` the blob the path names once it is read (on the store's readers) and the caller
    /// may have it: the access decision the gate leaves to these routes, taken before anything
    /// else is checked, as the gate would have. A refusal is answered.
    static func permitted(_ request: HTTPRequest, _ principal: Principal, _ coordinator: TaskCoordinator, _ responder: Responder,
                          _ act: @escaping @Sendable (Blob) -> Void)
    {
        let id = request.parameters["blob"] ?? ""
        coordinator.blob(id) { found in
            RouteSupport.answer(responder) { () throws(Refusal) in
                let owner = try Refusal.absentIfNotFound { () throws(Refusal) in try found.get() }.map(\.principal)
                if let refusal = Access.decide(principal, method: request.method, resource: .blob, identifier: nil, blob: id, blobOwner: { _ in owner }) {
                    throw refusal
                }
                try RouteSupport.checkQuery(request, allowed: [])
                act(try found.get())
            }
        }
    }
}
