import Testing
@testable import TransferEngine
import TransferVocabulary

/// The session cookie jar against RFC 6265 §5.2–5.3, without any network.
struct CookieJarTests {
    let now: Int64 = 1_700_000_000
    let http = URLParts("http://shop.example.com/cart/items")!
    let https = URLParts("https://shop.example.com/cart/items")!

    func jar(_ headers: [String], from url: URLParts? = nil) -> CookieJar {
        var jar = CookieJar()
        for h in headers { jar.store(h, from: url ?? http, now: now) }
        return jar
    }

    @Test func aPlainCookieIsHostOnlyWithTheDefaultPath() throws {
        let c = try #require(jar(["sid=abc"]).cookies.first)
        #expect(c == Cookie(name: "sid", value: "abc", domain: "shop.example.com", hostOnly: true, path: "/cart",
                            secure: false, httpOnly: false, expires: nil))
    }

    @Test func attributesAreRead() throws {
        let c = try #require(jar(["a=1; Domain=.Example.com; Path=/; Secure; HttpOnly; Max-Age=60"], from: https).cookies.first)
        #expect(c.domain == "example.com" && !c.hostOnly && c.path == "/" && c.secure && c.httpOnly && c.expires == now + 60)
    }

    @Test func maxAgeWinsOverExpires() throws {
        let c = try #require(jar(["a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT; Max-Age=10"]).cookies.first)
        #expect(c.expires == now + 10)
        let d = try #require(jar(["a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT"]).cookies.first)
        #expect(d.expires == 4_096_250_880)
    }

    @Test(arguments: [
        "=novalue", "noequals", "a=1; Domain=other.com", "a=1; Domain=com", "a=1; Secure",
        "a=1\u{7}", "a=b\tc",
    ])
    func whatAUserAgentMustIgnore(header: String) {
        #expect(jar([header]).cookies.isEmpty)
    }

    /// RFC 6265 §5.3 step 5, by the Public Suffix List (libpsl): a Domain that is a public suffix
    /// is refused, however many labels it has.
    @Test(arguments: [
        ("https://www.example.co.uk/", "co.uk"), ("https://user.github.io/", "github.io"),
        ("https://a.b.example.com/", "com"), ("https://x.s3.amazonaws.com/", "s3.amazonaws.com"),
    ])
    func aPublicSuffixDomainIsRefused(url: String, domain: String) {
        #expect(jar(["a=1; Domain=\(domain)"], from: URLParts(url)!).cookies.isEmpty)
        #expect(jar(["a=1; Domain=.\(domain)"], from: URLParts(url)!).cookies.isEmpty)
    }

    @Test func aRegistrableDomainUnderAPublicSuffixIsKept() throws {
        let c = try #require(jar(["a=1; Domain=example.co.uk"], from: URLParts("https://www.example.co.uk/")!).cookies.first)
        #expect(c.domain == "example.co.uk" && !c.hostOnly)
        let d = try #require(jar(["a=1; Domain=user.github.io"], from: URLParts("https://user.github.io/")!).cookies.first)
        #expect(d.domain == "user.github.io" && !d.hostOnly)
    }

    /// Step 5's exception: a Domain that is a public suffix and the host itself gives a host-only
    /// cookie, never one for the suffix's other hosts.
    @Test func aPublicSuffixThatIsTheHostIsHostOnly() throws {
        let c = try #require(jar(["a=1; Domain=github.io"], from: URLParts("https://github.io/")!).cookies.first)
        #expect(c.domain == "github.io" && c.hostOnly)
    }

    @Test func anExpiredCookieDeletesTheOneItNames() {
        var j = jar(["a=1; Path=/", "b=2; Path=/"])
        _ = j.takeChanged()
        j.store("a=gone; Path=/; Max-Age=0", from: http, now: now)
        #expect(j.cookies.map(\.name) == ["b"])
        let changed = j.takeChanged()
        #expect(changed)
    }

    @Test func theSameCookieAgainIsNoChange() {
        var j = jar(["a=1; Path=/"])
        _ = j.takeChanged()
        j.store("a=1; Path=/", from: http, now: now)
        let unchanged = !j.takeChanged()
        #expect(unchanged)
        j.store("a=2; Path=/", from: http, now: now)
        let changedAgain = j.takeChanged()
        #expect(changedAgain)
        #expect(j.cookies.map(\.value) == ["2"])
    }

    @Test func emptyAttributesAreSkipped() {
        #expect(jar(["a=1;; ;Path=/;"]).cookies.first?.path == "/")
    }

    @Test func liveDropsExpiredCookies() {
        var j = jar(["a=1; Max-Age=5", "b=2"])
        _ = j.takeChanged()
        let liveNames = j.live(now: now + 10).map(\.name) == ["b"]
        #expect(liveNames)
        let dropped = j.takeChanged()
        #expect(dropped)
    }

    @Test func pathsMatchOnSegments() {
        #expect(CookieJar.pathMatches("/api/x", "/api"))
        #expect(CookieJar.pathMatches("/api", "/api"))
        #expect(CookieJar.pathMatches("/api/x", "/api/"))
        #expect(!CookieJar.pathMatches("/apix", "/api"))
        #expect(CookieJar.defaultPath("/") == "/" && CookieJar.defaultPath("/a") == "/" && CookieJar.defaultPath("/a/b") == "/a")
    }

    @Test func addressesDoNotDomainMatch() {
        #expect(!CookieJar.domainMatches("10.0.0.1", "0.0.1"))
        #expect(CookieJar.domainMatches("a.b.example.com", "example.com"))
        #expect(!CookieJar.domainMatches("badexample.com", "example.com"))
    }

    @Test(arguments: [
        ("Wed, 21 Oct 2015 07:28:00 GMT", Int64(1_445_412_480)),
        ("Wednesday, 21-Oct-15 07:28:00 GMT", Int64(1_445_412_480)),
        ("Wed Oct 21 07:28:00 2015", Int64(1_445_412_480)),
    ])
    func datesInTheFormsServersSend(text: String, expected: Int64) {
        #expect(CookieJar.parseDate(text) == expected)
    }

    @Test func curlLinesAreNetscapeFormat() {
        let hostOnly = Cookie(name: "a", value: "1", domain: "h.example", hostOnly: true, path: "/", secure: false,
                              httpOnly: false, expires: nil)
        #expect(hostOnly.curlLine == "h.example\tFALSE\t/\tFALSE\t0\ta\t1")
        let domain = Cookie(name: "b", value: "2", domain: "example.com", hostOnly: false, path: "/p", secure: true,
                            httpOnly: true, expires: 99)
        #expect(domain.curlLine == "#HttpOnly_.example.com\tTRUE\t/p\tTRUE\t99\tb\t2")
    }

    @Test func sameDomainAcceptsOnlyTheTasksHost() {
        let policy = CookiePolicy(accept: .sameDomain)
        #expect(policy.accepts(from: "a.example", taskHost: "a.example"))
        #expect(!policy.accepts(from: "b.example", taskHost: "a.example"))
        #expect(!CookiePolicy(accept: .never).accepts(from: "a.example", taskHost: "a.example"))
    }
}

/// The bandwidth bucket: refilled by elapsed time, in debt by at most one piece.
struct TokenBucketTests {
    @Test func refillsAtItsRateAndGoesIntoDebtByOnePiece() {
        var bucket = TokenBucket(bytesPerSecond: 100_000, now: 0)
        let emptyAtFirst = !bucket.available(now: 0)
        #expect(emptyAtFirst)
        let afterATenth = bucket.available(now: 100_000_000)  // 10,000 bytes
        #expect(afterATenth)
        bucket.consume(30_000)  // 20,000 in debt
        let backToZero = !bucket.available(now: 300_000_000)  // 0.2 s later: zero, not above
        #expect(backToZero)
        let refilled = bucket.available(now: 310_000_000)
        #expect(refilled)
    }

    @Test func anEarlierReadingOfTheClockAddsNothing() {
        var bucket = TokenBucket(bytesPerSecond: 1_000_000, now: 0)
        let atFirst = bucket.available(now: 10_000_000)
        #expect(atFirst)
        bucket.consume(20_000)
        let earlierAddsNothing = !bucket.available(now: 5_000_000)
        #expect(earlierAddsNothing)
        let sameTimeAddsNothing = !bucket.available(now: 10_000_000)
        #expect(sameTimeAddsNothing)
    }

    @Test func holdsAtMostAFifthOfASecond() {
        var bucket = TokenBucket(bytesPerSecond: 1_000_000, now: 0)
        let full = bucket.available(now: 60_000_000_000)
        #expect(full)
        bucket.consume(200_001)
        let inDebt = !bucket.available(now: 60_000_000_000)
        #expect(inDebt)
    }

    /// What a full bucket held beyond the new, smaller capacity goes; then it refills at the new
    /// rate.
    @Test func aNewRateTrimsTheBucketAndRefillsAtItsOwnPace() {
        var bucket = TokenBucket(bytesPerSecond: 1_000_000, now: 0)
        _ = bucket.available(now: 1_000_000_000)  // full: 200,000
        bucket.setRate(100_000, now: 1_000_000_000)  // capacity 20,000
        bucket.consume(30_000)  // 10,000 in debt
        let paidBackAtTheNewRate = !bucket.available(now: 1_100_000_000)  // 0.1 s: zero, not above
        #expect(paidBackAtTheNewRate)
        let refilled = bucket.available(now: 1_110_000_000)
        #expect(refilled)
        #expect(bucket.rate == 100_000 && bucket.pieceSize == 5_000)
    }

    @Test func piecesAreATwentiethOfASecondWithinBounds() {
        #expect(TokenBucket(bytesPerSecond: 1_000_000, now: 0).pieceSize == 50_000)
        #expect(TokenBucket(bytesPerSecond: 2048, now: 0).pieceSize == 1024)
        #expect(TokenBucket(bytesPerSecond: 1 << 40, now: 0).pieceSize == 1 << 20)
    }
}
