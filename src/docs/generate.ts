/**
 * `npm run docs:generate`: rewrites the generated parts of docs/ (the configuration and command references)
 * from the code, and says which pages changed.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedPages } from './generated-docs.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
for (const page of await generatedPages(root)) {
  if (page.current === page.generated) {
    console.log(`${page.file}: up to date`);
    continue;
  }
  await writeFile(path.join(root, page.file), page.generated);
  console.log(`${page.file}: written`);
}
