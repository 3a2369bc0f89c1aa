import Testing
@testable import HTTPServer

struct RouterTests {
    let router = Router { t in
        t.add("GET", "/v1/sessions") { _, _ in }
        t.add("PUT", "/v1/sessions/{identifier}") { _, _ in }
        t.add("GET", "/v1/sessions/{identifier}") { _, _ in }
        t.add("DELETE", "/v1/sessions/{identifier}") { _, _ in }
        t.add("POST", "/v1/sessions/{identifier}/tasks") { _, _ in }
        t.add("POST", "/v1/sessions/{identifier}/tasks:batch") { _, _ in }
        t.add("GET", "/v1/sessions/{identifier}/tasks/{task}") { _, _ in }
        t.add("GET", "/v1/sessions/{identifier}/tasks/special") { _, _ in }
    }

    @Test func matchesParameters() throws {
        guard case .found(let route, let params) = router.match(method: "GET", path: "/v1/sessions/com.example.app/tasks/t-1") else {
            Issue.record("no match"); return
        }
        #expect(route.pattern == "/v1/sessions/{identifier}/tasks/{task}")
        #expect(params["identifier"] == "com.example.app")
        #expect(params["task"] == "t-1")
    }

    @Test func literalSegmentsWinOverParameters() {
        guard case .found(let route, _) = router.match(method: "GET", path: "/v1/sessions/a/tasks/special") else {
            Issue.record("no match"); return
        }
        #expect(route.pattern == "/v1/sessions/{identifier}/tasks/special")
    }

    @Test func literalWithColon() {
        guard case .found(let route, let params) = router.match(method: "POST", path: "/v1/sessions/s/tasks:batch") else {
            Issue.record("no match"); return
        }
        #expect(route.pattern == "/v1/sessions/{identifier}/tasks:batch")
        #expect(params["identifier"] == "s")
    }

    @Test func percentDecodesParameters() {
        guard case .found(_, let params) = router.match(method: "GET", path: "/v1/sessions/a%2Eb") else {
            Issue.record("no match"); return
        }
        #expect(params["identifier"] == "a.b")
    }

    @Test func headFollowsGet() {
        guard case .found(let route, _) = router.match(method: "HEAD", path: "/v1/sessions") else {
            Issue.record("no match"); return
        }
        #expect(route.method == "GET")
    }

    @Test func unknownPathIs404() {
        guard case .notFound = router.match(method: "GET", path: "/v2/nothing") else { Issue.record("expected notFound"); return }
        guard case .notFound = router.match(method: "GET", path: "/v1/sessions/") else { Issue.record("empty parameter must not match"); return }
    }

    @Test func trailingSlashIsARouteOfItsOwn() {
        let router = Router { t in
            t.add("GET", "/ui/") { _, _ in }
            t.add("GET", "/ui/{asset}") { _, _ in }
        }
        guard case .found(let route, _) = router.match(method: "GET", path: "/ui/") else { Issue.record("no match for /ui/"); return }
        #expect(route.pattern == "/ui/")
        guard case .found(let asset, let params) = router.match(method: "GET", path: "/ui/main.js") else {
            Issue.record("no match for an asset"); return
        }
        #expect(asset.pattern == "/ui/{asset}")
        #expect(params["asset"] == "main.js")
        guard case .notFound = router.match(method: "GET", path: "/ui") else { Issue.record("/ui is not /ui/"); return }
    }

    @Test func wrongMethodIs405WithAllowedMethods() {
        guard case .methodNotAllowed(let allowed) = router.match(method: "POST", path: "/v1/sessions/x") else {
            Issue.record("expected 405"); return
        }
        #expect(allowed == ["DELETE", "GET", "HEAD", "PUT"])
    }

    @Test func malformedPercentEncodingDoesNotMatch() {
        guard case .notFound = router.match(method: "GET", path: "/v1/sessions/%zz") else { Issue.record("expected notFound"); return }
    }
}
