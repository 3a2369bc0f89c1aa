import Lifecycles

/// URLSessionConfiguration's three kinds, named as the task lifecycle names them: a session's
/// mode decides what a restart does to its tasks.
package typealias SessionMode = Lifecycles.SessionMode

extension SessionMode {
    package var isDurable: Bool { self != .ephemeral }
}
