// C4-PlantUML include lines rewritten to the standard library's, and nothing else touched.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { c4Includes } from './c4.ts';
import { normalizeSource } from './encoding.ts';

const RAW = 'https://raw.githubusercontent.com';

describe('C4-PlantUML includes', { timeout: 10_000 }, () => {
  it('maps the forms people paste onto <C4/...>', () => {
    const cases: [string, string][] = [
      ['!include C4_Context.puml', '!include <C4/C4_Context>'],
      ['!include c4_container.puml', '!include <C4/C4_Container>'],
      ['  !include ./C4_Component.puml', '  !include <C4/C4_Component>'],
      ['!include "C4.puml"', '!include <C4/C4>'],
      [`!includeurl ${RAW}/plantuml-stdlib/C4-PlantUML/master/C4_Context.puml`, '!include <C4/C4_Context>'],
      [
        `!include ${RAW}/plantuml-stdlib/C4-PlantUML/v2.10.0/C4_Deployment.puml`,
        '!include <C4/C4_Deployment>',
      ],
      [
        `!includeurl ${RAW}/RicardoNiepel/C4-PlantUML/release/1-0/C4_Dynamic.puml`,
        '!include <C4/C4_Dynamic>',
      ],
      [
        '!include https://github.com/plantuml-stdlib/C4-PlantUML/raw/refs/heads/master/C4_Sequence.puml',
        '!include <C4/C4_Sequence>',
      ],
    ];
    for (const [line, want] of cases)
      assert.equal(
        c4Includes(`@startuml\n${line}\nPerson(a, "A")\n@enduml`),
        `@startuml\n${want}\nPerson(a, "A")\n@enduml`,
      );
  });

  it('leaves other includes alone', () => {
    for (const line of [
      '!include <C4/C4_Context>',
      '!include https://example.com/C4_Context.puml',
      `!include ${RAW}/acme/C4-PlantUML/master/C4_Context.puml`,
      '!include C4_Styles.puml',
      '!include_many C4_Context.puml',
      "' !include C4_Context.puml in a comment",
    ])
      assert.equal(c4Includes(line), line);
  });

  it('applies to every PlantUML source devutil renders', () => {
    assert.equal(
      normalizeSource('!include C4_Context.puml\r\nPerson(a, "A")'),
      '@startuml\n!include <C4/C4_Context>\nPerson(a, "A")\n@enduml',
    );
  });
});
