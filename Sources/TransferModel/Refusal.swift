/// A request the service refuses, in the domain's terms: why (`reason`), our stable machine `code`,
/// a human `detail`, and for validation failures the `field` at fault (a path such as
/// `tasks[2].request.url`). The API turns it into an RFC 9457 problem document; only the API knows
/// which HTTP status each reason is.
package struct Refusal: Error, Sendable {
    package enum Reason: Sendable {
        /// The request cannot be read (malformed JSON, a bad header).
        case malformed
        /// A field's value is wrong, or names something that cannot be used.
        case invalid
        case forbidden
        case notFound
        /// The resource's state does not allow it (an invalidating session, a task id in use).
        case conflict
        /// It existed and is gone for good (a swept file or body).
        case gone
        case unsupportedMediaType
        case rangeNotSatisfiable
        /// A principal's request rate or task quota is used up.
        case tooMany
        /// An `If-Match` precondition no longer holds: the resource changed since the client read it.
        case preconditionFailed
        case insufficientStorage
        /// The store cannot be reached.
        case unavailable
        case internalError
    }

    package let reason: Reason
    package let code: String
    package let detail: String
    package var field: String?
    /// Every field at fault when validation found more than one (the first is also `field`).
    package var errors: [FieldError] = []

    /// One invalid field of a refused body.
    package struct FieldError: Sendable {
        package let field: String
        package let code: String
        package let detail: String
    }

    package init(_ reason: Reason, _ code: String, _ detail: String, field: String? = nil) {
        self.reason = reason
        self.code = code
        self.detail = detail
        self.field = field
    }

    /// The fields at fault: those collected, or this refusal's own field.
    package var fieldErrors: [FieldError] {
        if !errors.isEmpty { return errors }
        return field.map { [FieldError(field: $0, code: code, detail: detail)] } ?? []
    }

    /// A field whose value is wrong.
    package static func invalid(_ field: String, _ detail: String, code: String = "validation_failed") -> Refusal {
        Refusal(.invalid, code, "\(field): \(detail)", field: field)
    }

    package static func notFound(_ what: String) -> Refusal { Refusal(.notFound, "not_found", "\(what) does not exist") }

    /// What `lookUp` found, or nil when it refused because there is no such thing. Any other
    /// refusal — a store that cannot be read above all — is no answer to whether it exists, and
    /// is thrown on.
    package static func absentIfNotFound<T>(_ lookUp: () throws(Refusal) -> T) throws(Refusal) -> T? {
        do throws(Refusal) {
            return try lookUp()
        } catch {
            guard error.reason == .notFound else { throw error }
            return nil
        }
    }
}
