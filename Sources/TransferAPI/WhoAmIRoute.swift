import HTTPServer
import JSON
import TransferModel

/// `GET /v1/whoami`: the principal the token belongs to — its name, role, namespaces, paths and
/// limits — so a caller can check its configuration without reading the auth file.
struct WhoAmIRoute {
    func register(in table: inout APIRouteTable) {
        table.add("GET", "/v1/whoami", .service) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                responder.respond(RouteSupport.json { json in
                    json.beginObject()
                    json.key("name"); json.string(principal.name)
                    json.key("role"); json.string(principal.role.rawValue)
                    json.key("namespaces"); WhoAmIRoute.strings(principal.namespaces, into: &json)
                    json.key("allow_paths"); WhoAmIRoute.strings(principal.allowPaths, into: &json)
                    let limits = principal.limits
                    json.key("limits"); json.beginObject()
                    json.key("requests_per_second"); if let v = limits.requestsPerSecond { json.double(v) } else { json.null() }
                    json.key("burst"); if let v = limits.burst { json.int(v) } else { json.null() }
                    json.key("max_unfinished_tasks"); if let v = limits.maxUnfinishedTasks { json.int(v) } else { json.null() }
                    json.key("max_bytes_per_second"); if let v = limits.maxBytesPerSecond { json.int(v) } else { json.null() }
                    json.endObject()
                    json.endObject()
                })
            }
        }
    }

    private static func strings(_ values: [String]?, into json: inout JSONWriter) {
        guard let values else { return json.null() }
        json.beginArray()
        for v in values { json.string(v) }
        json.endArray()
    }
}
