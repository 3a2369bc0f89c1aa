/// Validation that goes on after a field is refused, so that one reply names every field at fault
/// instead of making the client fix them one round trip at a time. Each independent check runs in
/// `check`; `finish` throws one refusal carrying them all (the first leads, for clients that read
/// only `field` and `detail`).
package struct FieldErrors {
    private var refusals: [Refusal] = []

    package init() {}

    /// Runs one check; a refusal about a field is kept, any other is thrown at once (a body that is
    /// not an object, say, has nothing more worth checking).
    package mutating func check(_ body: () throws(Refusal) -> Void) throws(Refusal) {
        do {
            try body()
        } catch {
            guard error.field != nil else { throw error }
            refusals.append(error)
        }
    }

    package func finish() throws(Refusal) {
        guard var first = refusals.first else { return }
        first.errors = refusals.flatMap(\.fieldErrors)
        throw first
    }
}
