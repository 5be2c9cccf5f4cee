/*
 * What the live page reads from pmproxy's answers besides values: a fetch's
 * time, per-second rates and error messages. Plain JS for the page (globals)
 * and for node (module.exports: qa 415 checks the rates against pmval's).
 *
 * pmproxy writes a fetch's time as "<seconds>.<nanoseconds>" with the
 * nanoseconds unpadded (sdscatfmt "%I.%I" in src/pmproxy/src/webapi.c, PCP
 * 6.0.3 and 6.3.8 alike): 728.77566623 is 728 s + 77566623 ns, 728.0776 s.
 * Read as a JSON number it is 728.7757; so the text is read, not the number.
 * Its compatibility form {"s":S,"us":U} is read too.
 */
'use strict';

// {sec, ns} of the first "timestamp" of a fetch's text, or null
function fetchTime(text) {
  let m = /"timestamp"\s*:\s*(\d+)(?:\.(\d{1,9}))?\s*[,}]/.exec(text);
  if (m)
    return { sec: Number(m[1]), ns: m[2] === undefined ? 0 : Number(m[2]) };
  m = /"timestamp"\s*:\s*\{\s*"s"\s*:\s*(\d+)\s*,\s*"us"\s*:\s*(\d+)\s*\}/.exec(text);
  return m ? { sec: Number(m[1]), ns: Number(m[2]) * 1000 } : null;
}

// Seconds from time a to time b (both of fetchTime)
function elapsed(a, b) {
  return (b.sec - a.sec) + (b.ns - a.ns) / 1e9;
}

// Per-second rate of a counter from before to now over dt seconds; null
// when there is no earlier value, it went back (a restart) or dt is not > 0
function counterRate(now, before, dt) {
  if (before === undefined || before === null || now < before || !(dt > 0))
    return null;
  return (now - before) / dt;
}

// The error of an answer that is not ok: pmproxy's own message
// ({"message":"...","success":false}) when it sent one, else the status
function pmproxyError(path, status, text) {
  let message = '';
  try {
    message = JSON.parse(text).message || '';
  } catch (e) {
    message = '';
  }
  return new Error(message ? `${path}: ${message} (HTTP ${status})` : `${path}: HTTP ${status}`);
}

if (typeof module !== 'undefined')
  module.exports = { fetchTime, elapsed, counterRate, pmproxyError };
