/// URLSessionConfiguration's three kinds (PRODUCT.md "Session modes").
enum SessionMode: String, Sendable {
    /// Everything durable; running tasks continue after a restart.
    case background
    /// Cookies and credentials durable; tasks end with `interrupted` at the next start.
    case `default`
    /// Nothing on disk but the files the client asked for.
    case ephemeral

    var isDurable: Bool { self != .ephemeral }
}
