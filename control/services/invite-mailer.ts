import nodemailer from 'nodemailer';
import type { Role } from '../domain/roles.js';

/** What an invite mail says: where to accept, as which role, until when. */
export interface InviteMail {
  to: string;
  link: string;
  role: Role;
  /** The inviter's email, so the invited person knows who asked. */
  invitedBy: string;
  expiresAt: Date;
}

export interface InviteMailer {
  send(mail: InviteMail): Promise<void>;
}

export interface SmtpSettings {
  /** smtp(s)://user:password@host:port */
  url: string;
  from: string;
  /** Deadline of connecting, of the server's greeting and of each silence on the socket (default 10 s). */
  timeoutMs?: number;
}

const SMTP_TIMEOUT_MS = 10_000;

/**
 * Sends invites through an SMTP server with nodemailer (docs/decisions.md, "Invite mail
 * with nodemailer"). nodemailer's own logger stays off: its debug output would carry the
 * AUTH exchange.
 */
export function smtpInviteMailer(settings: SmtpSettings): InviteMailer {
  const timeoutMs = settings.timeoutMs ?? SMTP_TIMEOUT_MS;
  const transport = nodemailer.createTransport({
    url: settings.url,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    logger: false,
    debug: false,
  });
  return {
    async send(mail) {
      await transport.sendMail({
        from: settings.from,
        to: mail.to,
        subject: 'You are invited to an account on the agent platform',
        text: [
          `${mail.invitedBy} invites you to their account on the agent platform as ${mail.role}.`,
          '',
          `Accept the invitation: ${mail.link}`,
          '',
          `The link works once, until ${mail.expiresAt.toISOString()}.`,
        ].join('\n'),
      });
    },
  };
}

/** What a failed send may log: never the error object, whose fields can hold the SMTP exchange. */
export function mailFailure(error: unknown): { code?: string; response_code?: number; message: string } {
  const { code, responseCode, message } = error as { code?: string; responseCode?: number; message?: string };
  return { code, response_code: responseCode, message: String(message ?? error) };
}
