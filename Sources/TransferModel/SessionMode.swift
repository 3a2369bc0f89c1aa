/// URLSessionConfiguration's three kinds (PRODUCT.md "Session modes").
package enum SessionMode: String, Sendable {
    /// Everything durable; running tasks continue after a restart.
    case background
    /// Cookies and credentials durable; tasks end with `interrupted` at the next start.
    case `default`
    /// Nothing on disk but the files the client asked for.
    case ephemeral

    package var isDurable: Bool { self != .ephemeral }
}

/// Where a session is in its life (`DELETE` starts invalidation).
package enum SessionLifecycle: String, Sendable {
    case active, invalidating, invalidated
}
