import { connect as tcpConnect } from "node:net";

/**
 * Publishes one message with a header block written byte for byte over the NATS protocol, as a
 * hostile producer could (nats.js refuses header values with a CR or LF). Resolves once the server
 * has answered the PING after it, so the message has reached the server (and a stream capturing
 * the subject).
 */
export async function publishWithRawHeaders(url: string, subject: string, headerBlock: string, body: string): Promise<void> {
  const { hostname, port } = new URL(url);
  const head = `NATS/1.0\r\n${headerBlock}\r\n\r\n`;
  const headLength = Buffer.byteLength(head);
  const total = headLength + Buffer.byteLength(body);
  const socket = tcpConnect({ host: hostname, port: Number(port) });
  try {
    await new Promise<void>((resolve, reject) => {
      let received = "";
      socket.on("error", reject);
      socket.on("data", (chunk) => {
        received += chunk.toString("utf8");
        if (received.includes("-ERR")) reject(new Error(`server refused the message: ${received.trim()}`));
        else if (received.includes("PONG")) resolve();
      });
      socket.write(`CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\n`);
      socket.write(`HPUB ${subject} ${headLength} ${total}\r\n${head}${body}\r\nPING\r\n`);
    });
  } finally {
    socket.destroy();
  }
}
