import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import protobuf from 'protobufjs';

/**
 * An OTLP/HTTP trace receiver, as a Collector or Tempo is to the platform: it takes
 * protobuf, decoded with the official opentelemetry-proto definitions (the .proto files,
 * loaded here by protobufjs on their own, not through the platform's codec), and JSON. It
 * answers 200 with an empty ExportTraceServiceResponse, or holds every request while `hang`.
 */

const PROTO_DIR = join(import.meta.dirname, '..', '..', 'proto', 'opentelemetry-proto');

export interface ReceivedExport {
  path: string;
  headers: IncomingHttpHeaders;
  /** The ExportTraceServiceRequest with protobuf's own field names (camelCase) and ids in hex, whichever encoding it came in. */
  body: any;
}

export interface OtlpReceiver {
  url: string;
  received: ReceivedExport[];
  hang: boolean;
  close(): Promise<void>;
}

let requestType: protobuf.Type | undefined;

/** ExportTraceServiceRequest, from opentelemetry/proto/collector/trace/v1/trace_service.proto. */
export function exportTraceServiceRequest(): protobuf.Type {
  if (requestType) return requestType;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  requestType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  return requestType;
}

/** Decodes protobuf bytes as a receiver does; ids (bytes) come out in hex, as OTLP JSON writes them. */
export function decodeExport(bytes: Uint8Array): any {
  const type = exportTraceServiceRequest();
  const object = type.toObject(type.decode(bytes), { longs: String, enums: Number, bytes: String });
  const ids = new Set(['traceId', 'spanId', 'parentSpanId']);
  return JSON.parse(JSON.stringify(object, (key, value) => (ids.has(key) ? Buffer.from(value, 'base64').toString('hex') : value)));
}

/** Encodes an OTLP JSON request (ids in hex) as protobuf, as an OpenTelemetry SDK sends it by default. */
export function encodeExport(json: unknown): Uint8Array<ArrayBuffer> {
  const type = exportTraceServiceRequest();
  const ids = new Set(['traceId', 'spanId', 'parentSpanId']);
  const withBytes = JSON.parse(JSON.stringify(json), (key, value) => (ids.has(key) ? Buffer.from(value, 'hex').toString('base64') : value));
  return new Uint8Array(type.encode(type.fromObject(withBytes)).finish());
}

/** ExportTraceServiceResponse, as a protobuf receiver answers. */
export function decodeExportResponse(bytes: Uint8Array): any {
  const root = exportTraceServiceRequest().root;
  const type = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');
  return type.toObject(type.decode(bytes), { longs: Number });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedExport[] = [];
  const receiver: OtlpReceiver = { url: '', received, hang: false, close: async () => {} };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => {
      const bytes = Buffer.concat(chunks);
      const protobufBody = request.headers['content-type'] === 'application/x-protobuf';
      received.push({ path: request.url!, headers: request.headers, body: protobufBody ? decodeExport(bytes) : JSON.parse(bytes.toString('utf8')) });
      if (receiver.hang) return;
      if (protobufBody) response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      else response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  receiver.close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return receiver;
}
