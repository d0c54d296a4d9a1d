// Editor help: every exported declaration of sdk/js/index.d.ts, every member of an
// exported interface, class or object type, and every exported function carries a JSDoc
// comment (/** ... */) that an editor shows on hover.  Read with TypeScript's parser
// (the cached typescript package); no service is started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const SRCDIR = process.env.TD_SRCDIR ?? '.';

function loadTypescript() {
  assert.ok(process.env.TD_CACHE, 'TD_CACHE names the test cache (tests/js/sdk.sh)');
  return require(join(process.env.TD_CACHE, 'npm/typescript/node_modules/typescript'));
}

// The names of the declarations and members of text that have no JSDoc comment.
export function undocumented(ts, text, file = 'index.d.ts') {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const missing = [];
  const hasDoc = (node) => ts.getJSDocCommentsAndTags(node).some((d) => ts.isJSDoc(d)
    && (ts.getTextOfJSDocComment(d.comment) ?? '').trim() !== '');
  const nameOf = (node) => {
    if (ts.isConstructorDeclaration(node)) return 'constructor';
    if (ts.isIndexSignatureDeclaration(node)) return '[index]';
    if (ts.isCallSignatureDeclaration(node)) return '()';
    return node.name ? node.name.getText(sf) : '?';
  };
  const where = (node) => `${file}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}`;
  const members = (owner, list) => {
    for (const m of list) {
      if (!hasDoc(m)) missing.push(`${owner}.${nameOf(m)} (${where(m)})`);
    }
  };
  const exported = (node) => node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  for (const st of sf.statements) {
    if (!exported(st)) continue;
    if (ts.isVariableStatement(st)) {
      // The comment of `export declare const A: T;` is the statement's.
      if (!hasDoc(st)) {
        for (const d of st.declarationList.declarations) missing.push(`${d.name.getText(sf)} (${where(st)})`);
      }
      continue;
    }
    const name = st.name ? st.name.getText(sf) : '?';
    if (!hasDoc(st)) missing.push(`${name} (${where(st)})`);
    if (ts.isInterfaceDeclaration(st) || ts.isClassDeclaration(st)) members(name, st.members);
    else if (ts.isTypeAliasDeclaration(st) && ts.isTypeLiteralNode(st.type)) members(name, st.type.members);
  }
  return missing;
}

test('the check finds a member, a method and a declaration without JSDoc', () => {
  const ts = loadTypescript();
  const text = `/** A thing. */
export interface A {
  /** Documented. */
  x: number;
  y: string; z: string;
  // A line comment is not JSDoc.
  w: boolean;
  /** */
  v: boolean;
}
export declare class C {
  /** Documented. */
  m(): void;
  n(): void;
}
/** Documented. */
export type P = {
  a?: string;
  /** Documented. */
  b?: string;
};
export declare function f(): void;
/** Documented. */
export declare function g(): void;
interface NotExported { q: number }
`;
  assert.deepEqual(undocumented(ts, text, 't.d.ts'), [
    'A.y (t.d.ts:5)', 'A.z (t.d.ts:5)', 'A.w (t.d.ts:7)', 'A.v (t.d.ts:9)',
    'C (t.d.ts:11)', 'C.n (t.d.ts:14)', 'P.a (t.d.ts:18)', 'f (t.d.ts:22)',
  ]);
});

test('every exported declaration and member of index.d.ts has JSDoc', () => {
  const ts = loadTypescript();
  const text = readFileSync(join(SRCDIR, 'sdk/js/index.d.ts'), 'utf8');
  const missing = undocumented(ts, text);
  assert.deepEqual(missing, [], `${missing.length} without a /** */ comment:\n${missing.join('\n')}`);
});
