import HTTPServer
import JSON
import TransferModel

/// `GET /v1`: what this service is and which API version it speaks. Behind the token like every
/// `/v1` route, so it doubles as a cheap "is my token accepted?" check.
struct APIRoot {
    let version: String
    let startedAt: Timestamp

    func register(in table: inout APIRouteTable) {
        // Nothing in it changes while the process runs: encoded once.
        var json = JSONWriter()
        json.beginObject()
        json.key("service"); json.string("transferd")
        json.key("version"); json.string(version)
        json.key("api"); json.string("v1")
        json.key("started_at"); json.string(startedAt.rfc3339)
        json.endObject()
        let body = json.bytes
        table.add("GET", "/v1", .service) { _, _, responder in
            responder.respond(.json(body))
        }
    }
}
