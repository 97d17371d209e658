/** Where OTLP/HTTP exporters send traces (the OTLP default path); the handler loads on the first request to it. */
export const OTLP_TRACES_PATH = '/v1/traces';
