import ArgumentParser
import NotifyRoute

/// The documented exit codes (sysexits.h where one fits).
package enum ExitStatus {
    package static let delivered = ExitCode(0)
    package static let noneDelivered = ExitCode(1)
    package static let usage = ExitCode(64)
    package static let badEventData = ExitCode(65)
    package static let noSinkAvailable = ExitCode(69)
    package static let configError = ExitCode(78)

    package static func forReport(_ report: DeliveryReport) -> ExitCode {
        switch report.summary {
        case .delivered, .suppressed, .planned: delivered
        case .noSinkAvailable: noSinkAvailable
        case .failed: noneDelivered
        }
    }
}
