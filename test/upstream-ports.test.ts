import assert from 'node:assert/strict';
import { marshalMarshalerOutput, marshalString } from './support/upstream/go-json.js';
import { EnvParseError, parseEnvFile, parseLine } from './support/upstream/go-envparse.js';
import { quote } from './support/upstream/go-strconv-quote.js';
import { renderTemplate, TemplateUnsupported } from './support/upstream/consul-template-render.js';

/**
 * The ports in test/support/upstream/ against their upstreams' own test tables, copied
 * case for case: if a port drifts from the source it claims, these fail, not the suites
 * that trust it.
 */

const bytes = (text: string) => Buffer.from(text, 'latin1'); // Go's "\xff" literals are bytes, not characters
const utf8 = (text: string) => Buffer.from(text, 'utf8');

describe('ports of upstream code, against upstream tests', () => {
  describe('go-envparse v0.1.0 (envparse_test.go)', () => {
    it('TestParse_OK: comments, blank lines, a later key overwrites', () => {
      const env = parseEnvFile(utf8('# Start of file\n\nFIRST=key and value pair\n_=_   # ok\n_2=_2 # ok\nFIRST="overwrite # original"  #...\n'));
      assert.deepEqual(Object.fromEntries(env), { FIRST: 'overwrite # original', _: '_', _2: '_2' });
    });

    it('TestParse_Err: the error names the line', () => {
      const cases: [string, number, string][] = [
        ['FOO=bar\nx\nXYZ=1\n', 2, 'missing ='],
        ['A=1\nB="foo\nbar"\nC=3\n', 2, 'unmatched "'],
        ["A=2\nB='foo\nbar'\nC=3", 2, "unmatched '"],
        ['\n\n\n\n\nA=1 # ok\n# ok\n\n\nU="\\\xFF"', 10, 'multibyte characters disallowed in escape sequences'],
      ];
      for (const [input, line, message] of cases) {
        assert.throws(() => parseEnvFile(bytes(input)), (error: EnvParseError) => error.line === line && error.cause.message === message, input);
      }
    });

    it('TestParseLine_OK', () => {
      const cases: [string, string, string][] = [
        ['', '', ''], [' ', '', ''], ['# ...', '', ''], [' # ...', '', ''],
        ['FoO=', 'FoO', ''], ['F=# ...', 'F', ''], ['F_O= ', 'F_O', ''], ['F= # ...', 'F', ''],
        ['FOO=bar', 'FOO', 'bar'], ['export FOO=bar', 'FOO', 'bar'], [' FOO = bar baz ', 'FOO', 'bar baz'],
        ['\tFOO\t= \tbar \t', 'FOO', 'bar'], ['export FOO = bar', 'FOO', 'bar'], ['export = bar', 'export', 'bar'],
        ['A1B2C3=a1b2c3', 'A1B2C3', 'a1b2c3'], ['FOO=bar # ok', 'FOO', 'bar'], ['FOO=#bar#', 'FOO', ''], ['FOO= # bar ', 'FOO', ''],
        ['FOO="bar#"', 'FOO', 'bar#'], ['FOO="bar\\n"', 'FOO', 'bar\n'], ['FOO="bar\\n" # comment', 'FOO', 'bar\n'],
        ['FOO = " bar\\t" ', 'FOO', ' bar\t'], ["FOO='bar#'", 'FOO', 'bar#'], ["FOO='\\n' # empty", 'FOO', '\\n'],
        ["FOO='' # empty", 'FOO', ''], ["FOO=normal'single ' ", 'FOO', 'normalsingle '],
        ['FOO= "double\\\\" normal # "EOL"', 'FOO', 'double\\ normal'],
        [`export FOO =  'single\\n' \\\\normal\\t "double\\"\\n " # comment`, 'FOO', 'single\\n \\\\normal\\t double"\n '],
        ['U1=\u{1F525}', 'U1', '\u{1F525}'], ["U2= ' \u{1F525} ' ", 'U2', ' \u{1F525} '],
        ['U3="\\u2318"', 'U3', '\u2318'], ['U3="\\uD83D\\uDE01"', 'U3', '\u{1F601}'], ['U4="\\u2318\\uD83D\\uDE01"', 'U4', '\u2318\u{1F601}'],
        ['FOO="The template value\\nmay have included\\nsome newlines!\\n\\ud83d\\udd25"', 'FOO', 'The template value\nmay have included\nsome newlines!\n🔥'],
        ["_=x' ' ", '_', 'x '], ['FOO.BAR=x', 'FOO.BAR', 'x'], ['FOO/BAR=x', 'FOO/BAR', 'x'],
        [`SOME_KEY = normal unquoted \\text 'plus single quoted\\' "\\"double quoted " # EOL`, 'SOME_KEY', `normal unquoted \\text plus single quoted\\ "double quoted `],
        ['w="\\r\\n"', 'w', '\r\n'],
      ];
      for (const [line, key, value] of cases) {
        const [k, v] = parseLine(utf8(line));
        assert.deepEqual([k.toString('utf8'), v.toString('utf8')], [key, value], line);
      }
    });

    it('TestParseLine_Err', () => {
      const cases: [string, string | RegExp][] = [
        ['foo bar', 'missing ='], ['=bar', 'empty key'], ['=', 'empty key'],
        ['1abc=x', /key/], ['@abc=x', /key/], ['a b c=x', /key/], ['a\nb=x', /key/], ['FOO=\x00', /value/],
        ['FOO=" bar', 'unmatched "'], ["FOO=' bar", "unmatched '"],
        [`FOO=ok '"ok"' \\"not ok ''`, 'unmatched "'], [`FOO=ok '"ok"' \\"not ok '"'`, "unmatched '"],
        ['FOO="\\a"', /"a"/], ['FOO="\\', 'incomplete escape sequence'], ['FOO="\\u12"', 'incomplete hex sequence'], ['FOO="\\uabcZ"', /"Z"/],
        ['FOO="abc \\uD83D"', 'incomplete Unicode surrogate pair'], ['FOO="abc \\uD83D \\uDE01"', 'incomplete Unicode surrogate pair'],
        ['FOO="abc \\uD83DDE01"', 'incomplete Unicode surrogate pair'], ['FOO="abc \\uD83D\\uDE0"', /"\\""/],
      ];
      for (const [line, expected] of cases) {
        assert.throws(() => parseLine(utf8(line)), (error: Error) => (typeof expected === 'string' ? error.message === expected : expected.test(error.message)), line);
      }
    });

    it('BenchmarkParseLine_Complex: the 27-byte value', () => {
      const [key, value] = parseLine(utf8(`export FOO = bar"baz'\\n'\\t " ☃ '#\\n\\t' "#\\uD83D\\ude01" # a really # long # comment!!!1111   `));
      assert.deepEqual([key.length, value.length], [3, 27]);
    });
  });

  describe("Go's encoding/json (encode_test.go)", () => {
    it('TestEncodeString: control bytes', () => {
      const short: Record<number, string> = { 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0c: '\\f', 0x0d: '\\r' };
      for (let b = 0; b < 0x20; b++) {
        const expected = `"${short[b] ?? `\\u00${b.toString(16).padStart(2, '0')}`}"`;
        assert.equal(marshalString(Buffer.from([b])).toString('latin1'), expected, `0x${b.toString(16)}`);
      }
    });

    it('TestHTMLEscape: <, >, &, U+2028, U+2029 in a Marshaled string and in a Marshaler output', () => {
      const html = utf8('<html>foo &\u2028 \u2029</html>');
      assert.equal(marshalString(html).toString('utf8'), '"\\u003chtml\\u003efoo \\u0026\\u2028 \\u2029\\u003c/html\\u003e"');
      assert.equal(marshalMarshalerOutput('T', Buffer.concat([utf8('"'), html, utf8('"')])).toString('utf8'), '"\\u003chtml\\u003efoo \\u0026\\u2028 \\u2029\\u003c/html\\u003e"');
    });

    it('invalid UTF-8 becomes \\ufffd; DEL passes (encode.go appendString)', () => {
      assert.equal(marshalString(bytes('foo\xc2\x7fbar')).toString('latin1'), '"foo\\ufffd\x7fbar"');
    });

    it('a Marshaler output that is not JSON fails with MarshalerError (scanner.go stateInStringEsc)', () => {
      assert.throws(() => marshalMarshalerOutput('dependency.NomadVarItem', bytes('"\\x01"')), /^MarshalerError: json: error calling MarshalJSON for type dependency\.NomadVarItem: invalid character 'x' in string escape code$/);
      assert.throws(() => marshalMarshalerOutput('T', bytes('"abc')), /unexpected end of JSON input/);
      assert.throws(() => marshalMarshalerOutput('T', bytes('"a" x')), /invalid character 'x' after top-level value/);
      assert.equal(marshalMarshalerOutput('T', bytes(' "a\\u00e9" ')).toString('latin1'), '"a\\u00e9"', 'space around the value is dropped');
    });
  });

  describe("Go's strconv.Quote (quote_test.go quotetests)", () => {
    it('escapes as Go does', () => {
      const cases: [Buffer, string][] = [
        [bytes('\x07\b\f\r\n\t\v'), '"\\a\\b\\f\\r\\n\\t\\v"'],
        [bytes('\\'), '"\\\\"'],
        [bytes('abc\xffdef'), '"abc\\xffdef"'],
        [utf8('\u263a'), '"☺"'],
        [utf8('\u{10ffff}'), '"\\U0010ffff"'],
        [bytes('\x04'), '"\\x04"'],
        [utf8('!\u00a0!\u2000!\u3000!'), '"!\\u00a0!\\u2000!\\u3000!"'],
        [bytes('\x7f'), '"\\x7f"'],
      ];
      for (const [input, expected] of cases) assert.equal(quote(input).toString('utf8'), expected, expected);
    });
  });

  describe('the consul-template renderer', () => {
    it('trims around {{- and -}} as text/template does, and refuses what it was not ported for', () => {
      const lookup = () => ({ B: 'b', A: 'a' });
      assert.equal(renderTemplate('x \n {{- with nomadVar "p" -}} \n\t{{ range .Tuples }}{{ .K }}{{ end }} {{- end }}\n', lookup).output.toString(), 'xAB\n');
      for (const unported of ['{{ .K }}', '{{ with nomadVar "p" }}{{ .A }}{{ end }}', '{{ with nomadVar "p" }}{{ .Keys | toJSON }}{{ end }}', '{{ with service "x" }}{{ end }}', '{{ with nomadVar "p@ns" }}{{ end }}', '{{/* c */}}', '{{ with nomadVar "p" }}']) {
        assert.throws(() => renderTemplate(unported, lookup), TemplateUnsupported, unported);
      }
    });
  });
});
