/**
 * The functions Nomad's job language (HCL2) defines: the keys of `Functions` in Nomad's
 * jobspec2/functions.go (hashicorp/nomad at aa026cc, 2026-08-21). A job calling any other
 * name fails to parse ("Call to unknown function"), e.g. Terraform's `regex`, which Nomad lacks.
 */
export const NOMAD_FUNCTIONS: ReadonlySet<string> = new Set([
  'abs', 'base64decode', 'base64encode', 'bcrypt', 'can', 'ceil', 'chomp', 'chunklist', 'cidrhost', 'cidrnetmask',
  'cidrsubnet', 'cidrsubnets', 'coalesce', 'coalescelist', 'compact', 'concat', 'contains', 'convert', 'csvdecode',
  'distinct', 'element', 'flatten', 'floor', 'format', 'formatdate', 'formatlist', 'indent', 'index', 'join',
  'jsondecode', 'jsonencode', 'keys', 'length', 'log', 'lookup', 'lower', 'max', 'merge', 'min', 'parseint', 'pow',
  'range', 'reverse', 'replace', 'regex_replace', 'rsadecrypt', 'setintersection', 'setproduct', 'setunion', 'sha256',
  'sha512', 'signum', 'slice', 'sort', 'split', 'strlen', 'strrev', 'substr', 'timeadd', 'title', 'trim',
  'trimprefix', 'trimspace', 'trimsuffix', 'try', 'upper', 'urlencode', 'uuidv4', 'uuidv5', 'values', 'yamldecode',
  'yamlencode', 'zipmap', 'abspath', 'basename', 'dirname', 'file', 'filebase64', 'fileexists', 'fileset', 'pathexpand',
]);

/**
 * Every function a parsed HCL file (@cdktf/hcl2json's JSON, expressions as "${…}" strings)
 * calls, with where. Type constraints (`type = list(string)`) are not calls and are skipped.
 */
export function functionCalls(value: unknown, at = ''): { name: string; at: string }[] {
  if (typeof value === 'string') {
    const calls: { name: string; at: string }[] = [];
    for (const expression of value.matchAll(/\$\{([\s\S]*?)\}/g)) {
      // Quoted strings inside the expression are data, not calls.
      const code = expression[1]!.replace(/"(?:[^"\\]|\\.)*"/g, '""');
      for (const call of code.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*\(/g)) calls.push({ name: call[1]!, at });
    }
    return calls;
  }
  if (Array.isArray(value)) return value.flatMap((item, index) => functionCalls(item, `${at}[${index}]`));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => (key === 'type' ? [] : functionCalls(item, at ? `${at}.${key}` : key)));
  }
  return [];
}
