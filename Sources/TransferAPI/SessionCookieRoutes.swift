import HTTPServer
import JSON
import TransferCore
import TransferEngine
import TransferModel
import TransferVocabulary

/// `GET /v1/sessions/{identifier}/cookies`: what a session's jar holds, for an operator to see.
/// Values are redacted unless `?values=true` (they are often credentials; not for a `read`
/// principal); pages of `limit`,
/// ordered by domain, path and name, `after` the `next` cursor of the page before.
struct SessionCookieRoutes {
    let coordinator: TaskCoordinator

    func register(in table: inout APIRouteTable) {
        let coordinator = coordinator
        table.add("GET", "/v1/sessions/{identifier}/cookies", .session) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: ["values", "limit", "after"])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                let limit = try Pagination.limit(request)
                let revealing: Bool
                switch request.query("values") {
                case nil, "false": revealing = false
                case "true":
                    // Cookie values are often credentials: for those who may change the session.
                    guard principal.role != .read else {
                        throw Refusal(.forbidden, "forbidden", "principal \(principal.name) has the read role: cookie values are not shown to it")
                    }
                    revealing = true
                default: throw Refusal(.invalid, "validation_failed", "values must be true or false", field: "values")
                }
                let after = try Pagination.after(request) ?? ""
                coordinator.engine.cookies(of: session.identifier) { cookies in
                    let sorted = cookies.map { (SessionCookieRoutes.cursor($0), $0) }.filter { $0.0 > after }.sorted { $0.0 < $1.0 }
                    let page = sorted.prefix(limit)
                    responder.respond(RouteSupport.json { json in
                        json.beginObject()
                        json.key("cookies"); json.beginArray()
                        for (_, cookie) in page { SessionCookieRoutes.encode(cookie, revealing: revealing, into: &json) }
                        json.endArray()
                        Pagination.writeNext(sorted.count > limit ? page.last?.0 : nil, into: &json)
                        json.endObject()
                    })
                }
            }
        }
    }

    /// `domain;path;name`: none of the three can hold a `;` (RFC 6265 §4.1.1), so the order of
    /// cursors is the order of the list.
    static func cursor(_ c: Cookie) -> String { "\(c.domain);\(c.path);\(c.name)" }

    static func encode(_ c: Cookie, revealing: Bool, into json: inout JSONWriter) {
        json.beginObject()
        json.key("name"); json.string(c.name)
        json.key("value"); json.string(revealing ? c.value : SessionConfiguration.redacted)
        json.key("domain"); json.string(c.domain)
        json.key("host_only"); json.bool(c.hostOnly)
        json.key("path"); json.string(c.path)
        json.key("secure"); json.bool(c.secure)
        json.key("http_only"); json.bool(c.httpOnly)
        json.key("expires_at"); json.optionalString(c.expires.map { Timestamp(milliseconds: $0 * 1000).rfc3339 })
        json.endObject()
    }
}
