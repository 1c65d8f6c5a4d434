// The protocol, client, router host and sources moved to a module of their own so that
// `notify-route` can link them without the server; users of this one keep seeing them.
@_exported import NotifyRouteHost
