import HTTPServer

/// `GET /ui/`: the operators' web console, a static page that talks to the `/v1` API from the
/// browser. The page and its files need no token (they hold no data); every API call it makes
/// does, so it shows only what the token's principal may see.
package struct ConsoleRoutes {
    /// What the page may load and connect to: its own files and this server's API, nothing
    /// inline (no `<script>` or `style` attribute text, no `eval`), no plugins, no framing, no
    /// `<base>` and no form posted anywhere (the token form is handled by the page's script).
    static let contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        + "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    package init() {}

    package func register(in table: inout RouteTable) {
        // Without the slash, the page's relative module URLs would resolve against `/`.
        table.add("GET", "/ui") { _, responder in
            responder.respond(HTTPResponse(status: 308, headers: HTTPHeaders([("Location", "/ui/")])))
        }
        table.add("GET", "/ui/") { request, responder in
            responder.respond(ConsoleRoutes.serve(ConsoleAssets.index, request))
        }
        table.add("GET", "/ui/{asset}") { request, responder in
            responder.respond(ConsoleRoutes.serve(request.parameters["asset"] ?? "", request))
        }
    }

    static func serve(_ name: String, _ request: HTTPRequest) -> HTTPResponse {
        guard let asset = ConsoleAssets.byName[name] else {
            return .problem(HTTPProblem(404, "not_found", "the console has no file \(name)"))
        }
        // Revalidated on every load (`no-cache`), answered 304 while the tag holds: a browser never
        // runs a console older than the binary serving it, and reloads cost a round trip each.
        var headers = HTTPHeaders([
            ("ETag", asset.tag),
            ("Cache-Control", "no-cache"),
            ("Content-Security-Policy", contentSecurityPolicy),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
        ])
        if EntityTag.matches(request, tag: asset.tag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.set("Content-Type", asset.contentType)
        return HTTPResponse(status: 200, headers: headers, body: .bytes(asset.bytes))
    }
}
