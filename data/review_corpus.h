// Review sentiment data for cross-lingual transfer: the Multilingual Amazon Reviews Corpus (MARC)
// as CSV, and Webis-CLS-10 review files. Stars 1-2 are negative, 4-5 positive, 3 is left out.
#pragma once
#include <string>
#include <vector>

namespace sa {

struct Review {
  std::string id, text;
  double stars = 0;
};

struct ReviewSet {
  std::vector<Review> reviews;
  int skipped = 0;  // records without text or rating (Webis-CLS-10's irregular markup)
};

// MARC CSV: "id,text,stars" rows, RFC 4180 quoting (quoted fields hold commas, quotes as "" and
// line breaks). A header row is recognised by a last field that is not a number, so a file without
// one keeps its first review. Fails naming the file and line for a row of another field count or
// a rating that is not a number.
ReviewSet read_marc_csv(const std::string& path);
// Webis-CLS-10 (`{en,de,fr,jp}/{books,dvd,music}/{train,test}.review`): <item> records with
// <rating> and <text>; a record missing either is skipped and counted; &amp; &lt; &gt; &quot; and
// &#39; are decoded.
ReviewSet read_webis_cls(const std::string& path);

// 0 negative, 1 positive, -1 neutral (3 stars: left out of the binary task).
int sentiment_label(double stars);

}  // namespace sa
