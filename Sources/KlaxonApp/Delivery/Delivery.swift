import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Logging

/// Builds the notifiers a config names, and runs deliveries.
public enum DeliveryWiring {
    /// One notifier per receiver. `caFile` lets email trust a private CA (tests, private relays).
    public static func notifiers(_ config: Config, charts: ChartSource? = nil) throws -> [String: any Notifier] {
        var out: [String: any Notifier] = [:]
        for receiver in config.receivers {
            let groupBy =
                config.routing.routes.first { $0.receivers.contains(receiver.name) }?.groupBy
                ?? config.routing.defaults.groupBy
            out[receiver.name] = try receiver.notifier(
                groupBy: groupBy, smtpCAFile: ProcessInfo.processInfo.environment["KLAXON_SMTP_CA_FILE"], charts: charts
            )
        }
        return out
    }

    public static func dispatcher(
        store: any DeliveryStore, config: Config, logger: Logger, lease: Int64? = nil,
        health: StoreHealth = StoreHealth(),
        charts: ChartSource? = nil, observeSend: (@Sendable (String, Double, Bool) -> Void)? = nil,
        observeFailure: (@Sendable (String, String, String) -> Void)? = nil,
        observeUnsentResolve: (@Sendable (String, String) -> Void)? = nil,
        observeFold: (@Sendable (String, Int) -> Void)? = nil
    ) throws -> Dispatcher {
        Dispatcher(
            store: store, notifiers: try notifiers(config, charts: charts), routing: config.routing,
            settings: settings(
                config, lease: lease, observeSend: observeSend, observeFailure: observeFailure,
                observeUnsentResolve: observeUnsentResolve, observeFold: observeFold),
            logger: logger, health: health)
    }

    /// The dispatcher's settings from a config.
    public static func settings(
        _ config: Config, lease: Int64? = nil, observeSend: (@Sendable (String, Double, Bool) -> Void)? = nil,
        observeFailure: (@Sendable (String, String, String) -> Void)? = nil,
        observeUnsentResolve: (@Sendable (String, String) -> Void)? = nil,
        observeFold: (@Sendable (String, Int) -> Void)? = nil
    ) -> Dispatcher.Settings {
        var settings = Dispatcher.Settings()
        settings.budgets = config.budgets
        settings.observeFold = observeFold
        settings.observeSend = observeSend
        settings.observeFailure = observeFailure
        settings.observeUnsentResolve = observeUnsentResolve
        settings.lease = lease ?? config.deliveryLease * 1000
        settings.giveUpAfter = config.giveUpAfter
        settings.fallbackReceiver = config.fallbackReceiver
        settings.externalURL = config.externalURL ?? ""
        settings.chatActions = ChatWiring.signer(config)
        return settings
    }

    /// A sample notification for `notify-test` and previews.
    public static func sample(receiver: String, now: Int64) -> AlertNotification {
        let t = Transition(
            rule: "klaxon-test", kind: "test", station: "TEST", metric: "test", state: .firing, at: now, value: 1,
            severity: .info, labels: [:], summary: "This is a test notification from Klaxon to \(receiver).",
            explanation: "sent by `klaxon notify-test \(receiver)`")
        return AlertNotification(
            key: "test-\(UUID().uuidString.lowercased())", receiver: receiver,
            alerts: [NotifiedAlert(transition: t, message: t.summary, id: 0)])
    }

    /// The edit `notify-test` makes of its sample on a receiver that edits: the test resolved, with a
    /// timeline, under a key of its own.
    public static func sampleEdit(of sample: AlertNotification, now: Int64) -> AlertNotification {
        var edited = sample
        edited.key = sample.key + "-edit"
        for i in edited.alerts.indices {
            edited.alerts[i].transition.state = .resolved
            edited.alerts[i].transition.at = now
            edited.alerts[i].message = "This test notification was edited in place: living messages work."
        }
        edited.living = LivingView(timeline: [
            TimelineEntry(at: sample.alerts.first?.transition.at ?? now, text: "test sent"),
            TimelineEntry(at: now, text: "edited"),
        ])
        return edited
    }
}
