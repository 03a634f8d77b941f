/**
 * The integration sandbox on a real project: Go from Debian's packages. Three heads checked in the one sandbox brought to each
 * in place: green, red for real, green (tests/support/integration-sandbox-heads.ts).
 */
import { GO, describeHeadsInOneSandbox } from '../support/integration-sandbox-heads.js';

describeHeadsInOneSandbox(GO);
