import Testing
import TransferCore
import TransferModel
@testable import TransferAPI

/// Every combination of role, method and resource the access decision meets, without a server.
struct AccessTests {
    static let roots = try! AllowedRoots(paths: [])

    static func principal(_ role: Principal.Role, _ namespaces: [String]?) -> Principal {
        Principal(name: "p", role: role, namespaces: namespaces, allowPaths: nil, roots: roots, limits: PrincipalLimits(),
                  requestRate: nil, quota: TaskQuota())
    }

    static let blobs: [String: String?] = ["b_mine": "p", "b_theirs": "q", "b_old": String?.none]

    static func decide(_ p: Principal, _ method: String, _ resource: APIResource, identifier: String? = nil, blob: String? = nil) -> String? {
        Access.decide(p, method: method, resource: resource, identifier: identifier, blob: blob) { blobs[$0] }?.code
    }

    @Test func namespacesHideOtherSessionsAsIfAbsent() {
        let writer = Self.principal(.write, ["com.a.", "org.b."])
        #expect(Self.decide(writer, "GET", .session, identifier: "com.a.one") == nil)
        #expect(Self.decide(writer, "POST", .session, identifier: "org.b.two") == nil)
        #expect(Self.decide(writer, "GET", .session, identifier: "com.ab") == "not_found", "a prefix, not a word")
        #expect(Self.decide(writer, "DELETE", .session, identifier: "com.c.one") == "not_found")
        let refusal = Access.decide(writer, method: "GET", resource: .session, identifier: "com.c.one", blob: nil) { _ in nil }
        #expect(refusal?.detail == Refusal.notFound("session com.c.one").detail, "word for word what a missing session gets")
    }

    @Test func creatingOutsideTheNamespacesIsRefusedByName() {
        let writer = Self.principal(.write, ["com.a."])
        #expect(Self.decide(writer, "PUT", .sessionCreation, identifier: "com.a.new") == nil)
        #expect(Self.decide(writer, "PUT", .sessionCreation, identifier: "com.b.new") == "namespace_not_allowed")
    }

    @Test func theReadRoleLooksButDoesNotChange() {
        let reader = Self.principal(.read, ["com."])
        #expect(Self.decide(reader, "GET", .session, identifier: "com.a.one") == nil)
        #expect(Self.decide(reader, "HEAD", .session, identifier: "com.a.one") == nil)
        for method in ["POST", "PUT", "PATCH", "DELETE"] {
            #expect(Self.decide(reader, method, .session, identifier: "com.a.one") == "forbidden")
            #expect(Self.decide(reader, method, .service) == "forbidden")
        }
        #expect(Self.decide(reader, "PUT", .sessionCreation, identifier: "com.a.new") == "forbidden")
    }

    @Test func blobsBelongToWhoStoredThem() {
        let writer = Self.principal(.write, ["com.a."])
        #expect(Self.decide(writer, "GET", .blob, blob: "b_mine") == nil)
        #expect(Self.decide(writer, "DELETE", .blob, blob: "b_mine") == nil)
        #expect(Self.decide(writer, "GET", .blob, blob: "b_theirs") == "not_found")
        #expect(Self.decide(writer, "GET", .blob, blob: "b_old") == "not_found", "an ownerless blob is an admin's")
        #expect(Self.decide(writer, "GET", .blob, blob: "b_missing") == "not_found")
        let admin = Self.principal(.admin, nil)
        for blob in ["b_mine", "b_theirs", "b_old"] { #expect(Self.decide(admin, "DELETE", .blob, blob: blob) == nil) }
        #expect(Self.decide(admin, "GET", .blob, blob: "b_missing") == "not_found")
    }

    /// A blob whose owner cannot be looked up (the store is down) is not one that does not exist.
    @Test func aBlobTheStoreCannotTellOfIsAnOutage() {
        let outage = Refusal(.unavailable, "store_unavailable", "the store cannot be read")
        let refusal = Access.decide(Self.principal(.admin, nil), method: "GET", resource: .blob, identifier: nil, blob: "b_mine") {
            _ throws(Refusal) in throw outage
        }
        #expect(refusal?.code == "store_unavailable")
    }

    @Test func anAdminSeesAndChangesEverything() {
        let admin = Self.principal(.admin, nil)
        #expect(Self.decide(admin, "DELETE", .session, identifier: "any.thing") == nil)
        #expect(Self.decide(admin, "PUT", .sessionCreation, identifier: "any.thing") == nil)
        #expect(admin.sees("x"))
    }
}
