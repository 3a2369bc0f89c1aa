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
        table.add("GET", "/v1/blobs/{blob}", .blob) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                coordinator.blob(request.parameters["blob"] ?? "") { found in
                    RouteSupport.answer(responder) { () throws(Refusal) in
                        let blob = try found.get()
                        responder.respond(RouteSupport.json { blob.encode(into: &$0) })
                    }
                }
            }
        }
        table.add("DELETE", "/v1/blobs/{blob}", .blob) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                coordinator.blob(request.parameters["blob"] ?? "") { found in
                    RouteSupport.answer(responder) { () throws(Refusal) in
                        coordinator.deleteBlob(try found.get()) { result in
                            switch result {
                            case .success: responder.respond(HTTPResponse(status: 204))
                            case .failure(let error): responder.respond(error.response)
                            }
                        }
                    }
                }
            }
        }
    }
}
