import TransferEngine

/// How a session's configuration reaches the engine: set from a request (`configureEngine`), or
/// read back with the session's cookies when it comes back from the store (`restoreEngine`).
protocol SessionEngineSetup: Sendable {
    func configureEngine(_ session: SessionState, settings: SessionSettings, cookies: [Cookie]?)
    func restoreEngine(_ session: SessionState)
}
