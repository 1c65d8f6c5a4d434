import NotifyRouteCLI
import NotifyRouteNetwork

NotifyRouteMain.main(network: .linked([AlertmanagerSink.plugin, WebhookSink.plugin]), daemon: .serve)
