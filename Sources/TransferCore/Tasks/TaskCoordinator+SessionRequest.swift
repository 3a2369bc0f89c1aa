import JSON
import TransferEngine
import TransferModel
import TransferVocabulary

extension TaskCoordinator {
    /// What a session PUT asks for.
    package struct SessionRequest: Sendable {
        var mode: SessionMode
        var configuration: SessionConfiguration
        var configurationJSON: JSONValue
        /// The configuration as the engine applies it (TLS files already read).
        var settings: SessionSettings
        /// nil: keep what the session has; `.some(nil)`: remove it; `.some(d)`: set it.
        var delegate: Delegate??
        /// The request named no secret (one is kept or generated).
        var delegateSecretGenerated: Bool

        package init(mode: SessionMode, configuration: SessionConfiguration, configurationJSON: JSONValue, settings: SessionSettings, delegate: Delegate?? = nil, delegateSecretGenerated: Bool) {
            self.mode = mode
            self.configuration = configuration
            self.configurationJSON = configurationJSON
            self.settings = settings
            self.delegate = delegate
            self.delegateSecretGenerated = delegateSecretGenerated
        }
    }
}
