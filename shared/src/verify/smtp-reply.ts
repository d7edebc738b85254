// SMTP replies: parsing (RFC 5321 §4.2, multi-line) and enhanced status codes (RFC 3463).
import type { SmtpReply } from '../contract/prober.ts';

const REPLY_LINE = /^([2-5]\d\d)([ -])(.*)$/s;
const ENHANCED_CODE = /^([245])\.(\d{1,3})\.(\d{1,3})(?=\s|$)/;

/** Whether `line` is the last line of a reply ("250 ok" rather than "250-…"). */
export function isFinalReplyLine(line: string): boolean {
  return line.length >= 3 && line[3] !== '-';
}

/**
 * Parses the lines of one reply (without CRLF) into code, enhanced code and text.
 * Returns null when the lines are not a well-formed reply: no lines, a line without a
 * 3-digit code, or lines whose codes disagree (RFC 5321 §4.2.1 requires the same code).
 */
export function parseReplyLines(lines: readonly string[]): SmtpReply | null {
  if (lines.length === 0) return null;
  let code: number | null = null;
  const texts: string[] = [];
  for (const line of lines) {
    // RFC 5321 §4.2: a bare code with no text is allowed ("250").
    const match = REPLY_LINE.exec(line.length === 3 ? `${line} ` : line);
    if (!match) return null;
    const lineCode = Number(match[1]);
    if (code !== null && lineCode !== code) return null;
    code = lineCode;
    texts.push(match[3] ?? '');
  }
  if (code === null) return null;
  // RFC 3463 / RFC 2034: the enhanced code leads the text of each line; the first one counts,
  // and its class must agree with the basic code's.
  const enhancedMatch = ENHANCED_CODE.exec(texts[0] ?? '');
  const enhanced = enhancedMatch && enhancedMatch[1] === String(code)[0] ? enhancedMatch[0] : null;
  const text = texts
    .map((line) => (enhanced && line.startsWith(enhanced) ? line.slice(enhanced.length).trimStart() : line))
    .join('\n')
    .trim();
  return { code, enhanced, text };
}
