package session

import (
	"os"
	"path/filepath"
)

// npmLinkCopies is what a session whose wall refuses every hard link (a Mac the link probe
// has not proved; see sandbox.LinkRefuser) gives npm, through NODE_OPTIONS: npm before 9.7
// (cacache 17.0 and earlier) moves each file into its cache with fs.link and fails on EPERM;
// for npm only, a refused link becomes a copy. A copy is checked as a read of the file and a
// write of the new one, each of which the wall decides on its own, so it reaches nothing a
// link would not. Later npm moves files with rename and never links.
const npmLinkCopies = `// Written by OpenWorker: hard links are refused in this sandbox; npm's become copies.
'use strict';
if (/^np[mx](-cli\.js)?$/.test(require('path').basename(process.argv[1] || ''))) {
  const fs = require('fs');
  const refused = (e) => e && (e.code === 'EPERM' || e.code === 'EACCES');
  const excl = fs.constants.COPYFILE_EXCL;
  const link = fs.link, linkSync = fs.linkSync, linkAsync = fs.promises.link;
  fs.link = function (src, dst, cb) {
    link.call(fs, src, dst, (e) => (refused(e) ? fs.copyFile(src, dst, excl, cb) : cb(e)));
  };
  fs.linkSync = function (src, dst) {
    try {
      return linkSync.call(fs, src, dst);
    } catch (e) {
      if (!refused(e)) throw e;
      return fs.copyFileSync(src, dst, excl);
    }
  };
  fs.promises.link = async function (src, dst) {
    try {
      return await linkAsync.call(fs.promises, src, dst);
    } catch (e) {
      if (!refused(e)) throw e;
      return fs.promises.copyFile(src, dst, excl);
    }
  };
}
`

// npmLinkCopiesFile is where the session writes npmLinkCopies: in its private tmp, which the
// sandbox reads.
const npmLinkCopiesFile = "npm-link-copies.cjs"

// writeNpmLinkCopies writes npmLinkCopies into the private tmp tmp and returns its path.
func writeNpmLinkCopies(tmp string) (string, error) {
	p := filepath.Join(tmp, npmLinkCopiesFile)
	return p, os.WriteFile(p, []byte(npmLinkCopies), 0o600)
}
