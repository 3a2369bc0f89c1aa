/// One webhook attempt: which event, the how-manyth try, what the receiver answered, and when the
/// next try is due.
package struct DeliveryAttempt: Sendable, Equatable {
    package let session: String
    package let event: String
    package let seq: Int64
    package let attempt: Int
    package let at: Timestamp
    package let status: Int?
    package let error: String?
    package let nextAttemptAt: Timestamp?

    package init(session: String, event: String, seq: Int64, attempt: Int, at: Timestamp, status: Int? = nil, error: String? = nil, nextAttemptAt: Timestamp? = nil) {
        self.session = session
        self.event = event
        self.seq = seq
        self.attempt = attempt
        self.at = at
        self.status = status
        self.error = error
        self.nextAttemptAt = nextAttemptAt
    }
}
