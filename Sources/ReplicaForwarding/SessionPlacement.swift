/// Where a session is served in cluster mode: here, or at the replica that holds it now.
package enum SessionPlace: Sendable, Equatable {
    case here
    /// The holder's address, "host:port", as the replicas reach each other.
    case replica(address: String)
    /// Held by a replica that is gone, at this replica's own address (the process this one
    /// replaced), until its lease expires: the client retries, and then finds the session taken over.
    case moving
    /// The store that says where cannot be reached: nowhere can the session be served now. Taken
    /// for "here", the request would find no session in memory and answer that it does not exist.
    case unknown
}

/// Which replica holds each session (its lease). `knownPlace` is asked on the server's threads
/// for every request to a session, and answers from memory only; when memory cannot tell,
/// `lookUp` asks the store, off those threads.
package protocol SessionPlacement: Sendable {
    /// Where `session` is served, if memory knows; nil when only the store can tell.
    func knownPlace(_ session: String) -> SessionPlace?
    /// Where `session` is served, as the store says (it may wait on the database).
    func lookUp(_ session: String) -> SessionPlace
}
